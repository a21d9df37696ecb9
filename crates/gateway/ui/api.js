// Calls to the gateway's own API (same origin), each with the key the user typed, if any.

import { getKey } from "./store.js";

/** A refused or failed call: the HTTP status and OpenAI's error `message` and `code`. */
export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code || null;
  }
}

function headers(json) {
  const h = new Headers();
  const key = getKey();
  if (key) h.set("Authorization", "Bearer " + key);
  if (json) h.set("Content-Type", "application/json");
  return h;
}

async function failure(response) {
  let message = `The server answered ${response.status}.`;
  let code = null;
  try {
    const body = await response.json();
    if (body && body.error) {
      if (typeof body.error.message === "string") message = body.error.message;
      if (typeof body.error.code === "string") code = body.error.code;
    }
  } catch {
    // Not JSON: the status says enough.
  }
  return new ApiError(response.status, message, code);
}

async function send(method, path, body, signal) {
  const response = await fetch(path, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: "no-store",
    credentials: "omit",
  });
  if (!response.ok) throw await failure(response);
  return response;
}

export async function getJson(path, signal) {
  return (await send("GET", path, undefined, signal)).json();
}

export async function postJson(path, body, signal) {
  return (await send("POST", path, body, signal)).json();
}

export async function del(path) {
  return (await send("DELETE", path)).json();
}

/** Every item of a list endpoint, oldest first, following `has_more` pages. */
export async function listAll(path) {
  const items = [];
  let after = null;
  for (let page = 0; page < 100; page++) {
    const query = new URLSearchParams({ order: "asc", limit: "100" });
    if (after) query.set("after", after);
    const body = await getJson(`${path}?${query}`);
    const data = Array.isArray(body.data) ? body.data : [];
    items.push(...data);
    if (!body.has_more || !body.last_id) break;
    after = body.last_id;
  }
  return items;
}

/** `POST /v1/files`: the stored file object. */
export async function upload(file) {
  const form = new FormData();
  form.append("purpose", "user_data");
  form.append("file", file, file.name);
  const response = await fetch("/v1/files", {
    method: "POST",
    headers: headers(false),
    body: form,
    cache: "no-store",
    credentials: "omit",
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** A file's bytes (downloads need the key, so they are fetched, not linked). */
export async function blob(path) {
  return (await send("GET", path)).blob();
}

/**
 * `POST /v1/responses` with `stream: true`: yields each server-sent event's data object (it
 * carries its `type`). Aborting `signal` closes the connection, which cancels the run.
 */
export async function* streamResponse(body, signal) {
  const response = await send("POST", "/v1/responses", { ...body, stream: true }, signal);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = frameEnd(buffer)) !== null) {
      const frame = buffer.slice(0, end.at);
      buffer = buffer.slice(end.at + end.length);
      const event = parseFrame(frame);
      if (event) yield event;
    }
  }
  const last = parseFrame(buffer);
  if (last) yield last;
}

function frameEnd(buffer) {
  const match = /\r?\n\r?\n/.exec(buffer);
  return match ? { at: match.index, length: match[0].length } : null;
}

function parseFrame(frame) {
  const data = [];
  let type = null;
  for (const line of frame.split(/\r?\n/)) {
    if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    else if (line.startsWith("event:")) type = line.slice(6).trim();
  }
  if (data.length === 0) return null;
  try {
    const event = JSON.parse(data.join("\n"));
    if (event && typeof event === "object") {
      if (!event.type && type) event.type = type;
      return event;
    }
  } catch {
    // A frame that is not JSON is not one of the API's events.
  }
  return null;
}
