// Drives the gateway's /v1/messages with the official `@anthropic-ai/sdk` npm package, unmodified.
//
// Usage: node anthropic_client.mjs BASE_URL MODEL
//   TOOLBRIDGE_NODE_MODULES: the node_modules folder holding `@anthropic-ai/sdk` (scripts/test.sh)
//   TOOLBRIDGE_TEST_KEY: the API key to send
//
// Two model requests, queued by the Rust test in this order: messages.create with tools (a
// tool_use block with parsed input) and messages.stream(...) with tools, its finalMessage() and
// its inputJson events (the same call). Exits non-zero on the first thing that is not as
// Anthropic would send it.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.TOOLBRIDGE_NODE_MODULES;
if (!modules) {
  console.error('anthropic node client: TOOLBRIDGE_NODE_MODULES is not set (run scripts/test.sh)');
  process.exit(2);
}
const sdk = join(modules, '@anthropic-ai', 'sdk');
const { default: Anthropic } = await import(pathToFileURL(join(sdk, 'index.mjs')).href);
const { VERSION } = await import(pathToFileURL(join(sdk, 'version.mjs')).href);

const [baseURL, model] = process.argv.slice(2);
const TOOLS = [
  {
    name: 'get_weather',
    description: 'Current weather for a city.',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];
const QUESTION = [{ role: 'user', content: 'What is the weather in Paris?' }];

function check(cond, what) {
  if (!cond) {
    console.error(`anthropic node client: FAILED: ${what}`);
    process.exit(1);
  }
}

function checkToolUse(message, how) {
  check(message.id.startsWith('msg_'), `${how}: id ${message.id}`);
  check(message.stop_reason === 'tool_use', `${how}: stop_reason ${message.stop_reason}`);
  const uses = message.content.filter((b) => b.type === 'tool_use');
  check(uses.length === 1, `${how}: one tool_use block, got ${JSON.stringify(message.content)}`);
  check(uses[0].id.startsWith('toolu_'), `${how}: tool_use id ${uses[0].id}`);
  check(uses[0].name === 'get_weather', `${how}: name ${uses[0].name}`);
  check(JSON.stringify(uses[0].input) === '{"city":"Paris"}', `${how}: input ${JSON.stringify(uses[0].input)}`);
}

const client = new Anthropic({ baseURL, apiKey: process.env.TOOLBRIDGE_TEST_KEY, maxRetries: 0 });

const created = await client.messages.create({ model, max_tokens: 256, tools: TOOLS, messages: QUESTION });
checkToolUse(created, 'create');

const stream = client.messages.stream({ model, max_tokens: 256, tools: TOOLS, messages: QUESTION });
let json = null;
stream.on('inputJson', (_partial, snapshot) => {
  json = snapshot;
});
const final = await stream.finalMessage();
checkToolUse(final, 'stream');
check(JSON.stringify(json) === '{"city":"Paris"}', `stream inputJson snapshot ${JSON.stringify(json)}`);

console.log(`anthropic node client ${VERSION}: ok`);
