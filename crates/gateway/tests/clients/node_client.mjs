// Drives the gateway with the official `openai` npm package, unmodified.
//
// Usage: node node_client.mjs BASE_URL MODEL
//   TOOLBRIDGE_NODE_MODULES: the node_modules folder holding `openai` (scripts/test.sh sets it)
//   TOOLBRIDGE_TEST_KEY: the API key to send
//
// Six requests, in the same order as python_client.py (the Rust test queues the upstream's
// answers to match): create without streaming (a call), its second turn (the answer), create
// with stream: true (a call, assembled from delta.tool_calls), the chat.completions.stream
// helper (a call, parsed by the helper), the helper on the second turn (the answer), and
// create with stream: true on the second turn (the answer). Exits non-zero on the first thing
// that is not as OpenAI would send it.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.TOOLBRIDGE_NODE_MODULES;
if (!modules) {
  console.error('node client: TOOLBRIDGE_NODE_MODULES is not set (run scripts/test.sh)');
  process.exit(2);
}
// An ES module resolves bare names next to itself, not through NODE_PATH: load the package's
// own ESM entry from the folder the set-up installed it in.
const { default: OpenAI } = await import(pathToFileURL(join(modules, 'openai', 'index.mjs')).href);
const { VERSION } = await import(pathToFileURL(join(modules, 'openai', 'version.mjs')).href);

const [baseURL, model] = process.argv.slice(2);
const FINAL = 'It is sunny and 24 C in Paris.';
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city.',
      strict: true,
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
];
const QUESTION = [{ role: 'user', content: 'What is the weather in Paris?' }];

function check(cond, what) {
  if (!cond) {
    console.error(`node client: FAILED: ${what}`);
    process.exit(1);
  }
}

function checkCall(call, what) {
  check(call.type === 'function', `${what}: type ${call.type}`);
  check(call.id.startsWith('call_'), `${what}: id ${call.id}`);
  check(call.function.name === 'get_weather', `${what}: name ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  check(JSON.stringify(args) === '{"city":"Paris"}', `${what}: arguments ${call.function.arguments}`);
}

function secondTurn(callId) {
  return [
    ...QUESTION,
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: callId, type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
      ],
    },
    { role: 'tool', tool_call_id: callId, content: 'sunny, 24 C' },
  ];
}

const client = new OpenAI({
  baseURL,
  apiKey: process.env.TOOLBRIDGE_TEST_KEY ?? 'unused',
  maxRetries: 0,
  timeout: 20000,
});

// 1. Non-streaming.
let r = await client.chat.completions.create({ model, messages: QUESTION, tools: TOOLS });
check(r.choices[0].finish_reason === 'tool_calls', `1: finish_reason ${r.choices[0].finish_reason}`);
check(r.choices[0].message.tool_calls?.length === 1, '1: one tool call');
checkCall(r.choices[0].message.tool_calls[0], '1');
check(r.usage?.total_tokens > 0, '1: usage');
const callId = r.choices[0].message.tool_calls[0].id;

// 2. Second turn.
r = await client.chat.completions.create({ model, messages: secondTurn(callId), tools: TOOLS });
check(r.choices[0].message.content === FINAL, `2: content ${r.choices[0].message.content}`);
check(r.choices[0].finish_reason === 'stop', `2: finish_reason ${r.choices[0].finish_reason}`);

// 3. stream: true, assembling delta.tool_calls.
const stream = await client.chat.completions.create({
  model,
  messages: QUESTION,
  tools: TOOLS,
  stream: true,
  stream_options: { include_usage: true },
});
const calls = new Map();
let finish = null;
let usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const ch of chunk.choices) {
    for (const d of ch.delta.tool_calls ?? []) {
      if (!calls.has(d.index)) calls.set(d.index, { id: null, name: null, arguments: '' });
      const slot = calls.get(d.index);
      if (d.id) slot.id = d.id;
      if (d.function?.name) slot.name = d.function.name;
      if (d.function?.arguments) slot.arguments += d.function.arguments;
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
}
check(finish === 'tool_calls', `3: finish_reason ${finish}`);
check(calls.size === 1 && calls.has(0), `3: call indexes ${[...calls.keys()]}`);
const c0 = calls.get(0);
check(c0.id.startsWith('call_') && c0.name === 'get_weather', `3: ${JSON.stringify(c0)}`);
check(JSON.parse(c0.arguments).city === 'Paris', `3: ${c0.arguments}`);
check(usage?.total_tokens > 0, '3: usage chunk');

// 4. The stream helper (chat.completions.stream; beta.chat.completions.stream in older versions).
const streamHelper = (body) =>
  client.chat.completions.stream ? client.chat.completions.stream(body) : client.beta.chat.completions.stream(body);
const doneEvents = [];
let s = streamHelper({ model, messages: QUESTION, tools: TOOLS });
s.on('tool_calls.function.arguments.done', (e) => doneEvents.push(e));
let final = await s.finalChatCompletion();
check(doneEvents.length === 1, `4: ${doneEvents.length} arguments.done events`);
check(doneEvents[0].name === 'get_weather', '4: event name');
check(doneEvents[0].parsed_arguments?.city === 'Paris', `4: ${JSON.stringify(doneEvents[0].parsed_arguments)}`);
check(final.choices[0].finish_reason === 'tool_calls', `4: finish_reason ${final.choices[0].finish_reason}`);
checkCall(final.choices[0].message.tool_calls[0], '4');
check(final.choices[0].message.tool_calls[0].function.parsed_arguments?.city === 'Paris', '4: parsed_arguments');

// 5. The stream helper on the second turn.
let text = '';
s = streamHelper({ model, messages: secondTurn(callId), tools: TOOLS });
s.on('content.delta', (e) => (text += e.delta));
final = await s.finalChatCompletion();
check(text === FINAL, `5: streamed text ${text}`);
check(final.choices[0].message.content === FINAL, '5: final content');
check(final.choices[0].finish_reason === 'stop', `5: finish_reason ${final.choices[0].finish_reason}`);

// 6. stream: true on the second turn.
const again = await client.chat.completions.create({ model, messages: secondTurn(callId), tools: TOOLS, stream: true });
text = '';
finish = null;
for await (const chunk of again) {
  for (const ch of chunk.choices) {
    text += ch.delta.content ?? '';
    if (ch.finish_reason) finish = ch.finish_reason;
  }
}
check(text === FINAL && finish === 'stop', `6: ${text} ${finish}`);

console.log(`node client (openai ${VERSION}): ok`);
