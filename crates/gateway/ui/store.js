// What the page keeps in this browser (localStorage, per origin): the API key, the list of
// conversations (ids of /v1/conversations with a title taken from the first message), the
// conversation last open, the chosen model and tools. The server keeps the conversations
// themselves; the list only says which ones this browser started.

const PREFIX = "toolbridge.";

function read(name, fallback) {
  try {
    const raw = window.localStorage.getItem(PREFIX + name);
    return raw === null ? fallback : JSON.parse(raw);
  } catch {
    // Storage may be off (private windows, policies) or hold something unreadable.
    return fallback;
  }
}

function write(name, value) {
  try {
    if (value === null || value === undefined) {
      window.localStorage.removeItem(PREFIX + name);
    } else {
      window.localStorage.setItem(PREFIX + name, JSON.stringify(value));
    }
  } catch {
    // Without storage the page still works; it forgets on reload.
  }
}

export function getKey() {
  const key = read("key", "");
  return typeof key === "string" ? key : "";
}

export function setKey(key) {
  write("key", key ? key : null);
}

/** The conversations, newest first: `[{id, title, at}]`. */
export function conversations() {
  const list = read("conversations", []);
  return Array.isArray(list)
    ? list.filter((c) => c && typeof c.id === "string" && typeof c.title === "string")
    : [];
}

export function addConversation(id, title) {
  const list = conversations().filter((c) => c.id !== id);
  list.unshift({ id, title, at: Date.now() });
  write("conversations", list);
}

export function removeConversation(id) {
  write("conversations", conversations().filter((c) => c.id !== id));
  if (current() === id) setCurrent(null);
}

export function current() {
  const id = read("current", null);
  return typeof id === "string" ? id : null;
}

export function setCurrent(id) {
  write("current", id);
}

export function model() {
  const m = read("model", null);
  return typeof m === "string" ? m : null;
}

export function setModel(name) {
  write("model", name);
}

/** Which hosted tools are on: `{code, search, image}`. */
export function tools() {
  const t = read("tools", null);
  return {
    code: t ? t.code === true : true,
    search: t ? t.search === true : false,
    image: t ? t.image === true : false,
  };
}

export function setTools(t) {
  write("tools", { code: !!t.code, search: !!t.search, image: !!t.image });
}
