// Drives the gateway's Responses API with the official `openai` npm package, unmodified.
//
// Usage: node responses_js.mjs BASE_URL MODEL
//   TOOLBRIDGE_NODE_MODULES: the node_modules folder holding `openai` (scripts/test.sh sets it)
//   TOOLBRIDGE_TEST_KEY: the API key to send
//
// Prints one JSON object of what it saw (the Rust test asserts on it); exits 1 on any client
// exception or when something it needs to go on is missing.
//
// The requests, in order, and what the upstream behind the gateway must answer (4 model calls):
//   1. responses.create, no stream, input "Say hello."             -> text
//   2. responses.stream(...), input "Say hello again."             -> text (streamed; the
//      helper's accumulator needs response.created first, output_item.added before the
//      deltas of an item, content_part.added before its text deltas, and response.completed
//      for finalResponse())
//   3. responses.create with the function tool get_weather,
//      input "What is the weather in Paris?"                       -> a call get_weather {"city": "Paris"}
//   4. responses.create with previous_response_id = 3's id and a
//      function_call_output "sunny, 24 C" for its call_id          -> text

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.TOOLBRIDGE_NODE_MODULES;
if (!modules) {
  console.error('responses_js: TOOLBRIDGE_NODE_MODULES is not set (run scripts/test.sh)');
  process.exit(2);
}
// An ES module resolves bare names next to itself, not through NODE_PATH: load the package's
// own ESM entry from the folder the set-up installed it in.
const { default: OpenAI } = await import(pathToFileURL(join(modules, 'openai', 'index.mjs')).href);
const { VERSION } = await import(pathToFileURL(join(modules, 'openai', 'version.mjs')).href);

const [baseURL, model] = process.argv.slice(2);
const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city.',
  strict: true,
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

function need(cond, what) {
  if (!cond) {
    console.error(`responses_js: FAILED: ${what}`);
    process.exit(1);
  }
}

function summary(r) {
  return {
    id: r.id,
    object: r.object,
    status: r.status,
    model: r.model,
    text: r.output_text,
    previous_response_id: r.previous_response_id ?? null,
    usage: r.usage ?? null,
    output: r.output.map((item) => {
      const entry = { type: item.type, id: item.id ?? null, status: item.status ?? null };
      if (item.type === 'message') {
        entry.text = item.content.filter((c) => c.type === 'output_text').map((c) => c.text).join('');
      } else if (item.type === 'function_call') {
        Object.assign(entry, { name: item.name, arguments: item.arguments, call_id: item.call_id });
      }
      return entry;
    }),
  };
}

async function main() {
  const client = new OpenAI({
    baseURL,
    apiKey: process.env.TOOLBRIDGE_TEST_KEY || 'unused',
    maxRetries: 0,
    timeout: 60_000,
  });
  const result = { openai_version: VERSION };

  // 1. Non-streaming text.
  result.create = summary(await client.responses.create({ model, input: 'Say hello.' }));

  // 2. The stream helper and its accumulated final response.
  const types = [];
  const seqs = [];
  let deltas = '';
  const stream = client.responses.stream({ model, input: 'Say hello again.' });
  for await (const event of stream) {
    types.push(event.type);
    seqs.push(event.sequence_number);
    if (event.type === 'response.output_text.delta') deltas += event.delta;
  }
  const final = await stream.finalResponse();
  result.stream = { event_types: types, sequence_numbers: seqs, delta_text: deltas, final: summary(final) };

  // 3-4. A function tool round trip through previous_response_id.
  const asked = await client.responses.create({
    model,
    input: 'What is the weather in Paris?',
    tools: [WEATHER_TOOL],
  });
  const calls = asked.output.filter((i) => i.type === 'function_call');
  need(calls.length === 1, `3: one function_call item, got ${asked.output.map((i) => i.type)}`);
  const answered = await client.responses.create({
    model,
    previous_response_id: asked.id,
    input: [{ type: 'function_call_output', call_id: calls[0].call_id, output: 'sunny, 24 C' }],
    tools: [WEATHER_TOOL],
  });
  result.function = { call: summary(asked), answer: summary(answered) };

  console.log(JSON.stringify(result, null, 1));
}

main().catch((e) => {
  console.error(`responses_js: ${e?.stack ?? e}`);
  process.exit(1);
});
