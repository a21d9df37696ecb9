// The chat page: conversations (ids kept in this browser, items kept by the server), the
// composer (text, attached files, model and hosted tools), and one streamed response at a time
// on POST /v1/responses, whose events update the page as they come.

import * as api from "./api.js";
import * as store from "./store.js";
import { AnswerText, ToolBlock, filesBlock, userMessage, userParts } from "./items.js";

const $ = (id) => document.getElementById(id);
const ui = {
  menu: $("menu-toggle"),
  newTop: $("new-conversation-top"),
  newButton: $("new-conversation"),
  list: $("conversations"),
  none: $("no-conversations"),
  keyForm: $("key-form"),
  key: $("api-key"),
  model: $("model"),
  toolCode: $("tool-code"),
  toolSearch: $("tool-search"),
  toolImage: $("tool-image"),
  notice: $("notice"),
  log: $("log"),
  empty: $("empty"),
  composer: $("composer"),
  attachments: $("attachments"),
  attach: $("attach"),
  prompt: $("prompt"),
  send: $("send"),
  stop: $("stop"),
  status: $("status"),
};

const state = {
  conversation: store.current(),
  /** The AbortController of the response streaming now. */
  running: null,
  /** Files chosen for the next message: `{name, id, error, done}`. */
  attachments: [],
  /** Container files already shown in this conversation. */
  shownFiles: new Set(),
  /** Bumped when another conversation is opened, so a late answer for the old one is dropped. */
  view: 0,
};

// ---- small helpers ----

function showNotice(message) {
  ui.notice.textContent = message;
  ui.notice.hidden = false;
}

function clearNotice() {
  ui.notice.hidden = true;
  ui.notice.textContent = "";
}

function setStatus(text) {
  ui.status.textContent = text;
}

function nearBottom() {
  return ui.log.scrollHeight - ui.log.scrollTop - ui.log.clientHeight < 120;
}

function scrollToEnd() {
  ui.log.scrollTop = ui.log.scrollHeight;
}

function add(node) {
  const follow = nearBottom();
  ui.empty.hidden = true;
  ui.log.append(node);
  if (follow) scrollToEnd();
  return node;
}

function clearLog() {
  ui.log.replaceChildren(ui.empty);
  ui.empty.hidden = false;
  state.shownFiles = new Set();
}

function errorLine(message) {
  const p = document.createElement("p");
  p.className = "error-line";
  p.textContent = message;
  return p;
}

function titleOf(text, files) {
  const line = text.split("\n").find((l) => l.trim()) || files[0] || "Conversation";
  const clean = line.replace(/\s+/g, " ").trim();
  return clean.length > 60 ? clean.slice(0, 59) + "…" : clean;
}

function setMenu(open) {
  document.body.classList.toggle("menu-open", open);
  ui.menu.setAttribute("aria-expanded", String(open));
}

function needKey() {
  showNotice(
    store.getKey()
      ? "The gateway did not accept this API key. Enter the right one under Settings, then Save."
      : "This gateway needs an API key. Enter it under Settings, then Save.",
  );
  setMenu(true);
  ui.key.focus();
}

function failed(error, what) {
  if (error instanceof api.ApiError && error.status === 401) needKey();
  else showNotice(`${what}: ${error.message}`);
}

// ---- conversations ----

function renderList() {
  const list = store.conversations();
  ui.list.replaceChildren();
  ui.none.hidden = list.length > 0;
  for (const c of list) {
    const li = document.createElement("li");
    li.className = "conversation";
    const open = document.createElement("button");
    open.type = "button";
    open.className = "conversation-open";
    open.textContent = c.title;
    if (c.id === state.conversation) open.setAttribute("aria-current", "true");
    open.addEventListener("click", () => {
      setMenu(false);
      openConversation(c.id);
    });
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "conversation-delete icon-button";
    remove.textContent = "×";
    remove.setAttribute("aria-label", "Delete conversation " + c.title);
    remove.addEventListener("click", () => deleteConversation(c.id, c.title));
    li.append(open, remove);
    ui.list.append(li);
  }
}

async function deleteConversation(id, title) {
  if (!window.confirm(`Delete “${title}”?`)) return;
  store.removeConversation(id);
  if (state.conversation === id) newConversation();
  else renderList();
  try {
    await api.del(`/v1/conversations/${encodeURIComponent(id)}`);
  } catch {
    // Already gone on the server (expired): it is gone from the list too.
  }
}

function newConversation() {
  if (state.running) state.running.abort();
  state.view++;
  state.conversation = null;
  store.setCurrent(null);
  clearLog();
  clearNotice();
  setStatus("");
  renderList();
  setMenu(false);
  ui.prompt.focus();
}

async function openConversation(id) {
  if (state.running) state.running.abort();
  const view = ++state.view;
  state.conversation = id;
  store.setCurrent(id);
  clearLog();
  clearNotice();
  renderList();
  setStatus("Loading the conversation…");
  let items;
  try {
    items = await api.listAll(`/v1/conversations/${encodeURIComponent(id)}/items`);
  } catch (e) {
    if (view !== state.view) return;
    setStatus("");
    if (e instanceof api.ApiError && e.status === 404) {
      store.removeConversation(id);
      state.conversation = null;
      renderList();
      showNotice("That conversation is no longer on the server (expired or deleted).");
    } else {
      failed(e, "The conversation could not be loaded");
    }
    return;
  }
  if (view !== state.view) return;
  // Each container's files go at the end of the last turn that used it: before the next
  // question (null: at the end).
  const containers = new Map();
  const open = new Set();
  for (const item of items) {
    if (item.type === "message" && item.role === "user") {
      const { text, files } = userParts(item);
      const node = add(userMessage(text, files));
      for (const container of open) containers.set(container, node);
      open.clear();
    } else if (item.type === "message") {
      const answer = new AnswerText();
      answer.set(
        (item.content || [])
          .map((p) => (p && typeof p.text === "string" ? p.text : ""))
          .join(""),
      );
      answer.finish();
      add(answer.el);
    } else if (item.type === "function_call_output" || item.type === "custom_tool_call_output") {
      // The client's tool results: not this page's (it sends none).
    } else if (typeof item.type === "string") {
      add(new ToolBlock(item).el);
      if (item.container_id) {
        open.add(item.container_id);
        containers.set(item.container_id, null);
      }
    }
  }
  for (const [container, before] of containers) await showFiles(container, view, before);
  setStatus("");
  scrollToEnd();
}

async function showFiles(container, view, before = null) {
  let listing;
  try {
    listing = await api.getJson(`/v1/containers/${encodeURIComponent(container)}/files`);
  } catch {
    return;
  }
  if (view !== state.view) return;
  const fresh = (listing.data || []).filter((f) => f && f.id && !state.shownFiles.has(f.id));
  if (!fresh.length) return;
  for (const f of fresh) state.shownFiles.add(f.id);
  const block = filesBlock(fresh.map((f) => ({ ...f, container_id: f.container_id || container })));
  if (before) ui.log.insertBefore(block, before);
  else add(block);
}

// ---- models and tools ----

async function loadModels() {
  let body;
  try {
    body = await api.getJson("/v1/models");
  } catch (e) {
    failed(e, "The models could not be listed");
    return false;
  }
  const names = (body.data || []).map((m) => m && m.id).filter((id) => typeof id === "string");
  const wanted = store.model();
  ui.model.replaceChildren();
  for (const name of names) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = name;
    ui.model.append(option);
  }
  if (wanted && names.includes(wanted)) ui.model.value = wanted;
  if (!names.length) showNotice("The gateway serves no model; configure one in toolbridge.toml.");
  return true;
}

function hostedTools() {
  const tools = [];
  if (ui.toolCode.checked) tools.push({ type: "code_interpreter", container: { type: "auto" } });
  if (ui.toolSearch.checked) tools.push({ type: "web_search" });
  if (ui.toolImage.checked) tools.push({ type: "image_generation" });
  return tools;
}

function saveTools() {
  store.setTools({ code: ui.toolCode.checked, search: ui.toolSearch.checked, image: ui.toolImage.checked });
}

// ---- attachments ----

function renderAttachments() {
  ui.attachments.replaceChildren();
  for (const a of state.attachments) {
    const li = document.createElement("li");
    li.className = "chip" + (a.error ? " chip-error" : "");
    const label = a.error ? `${a.name} (failed: ${a.error})` : a.done ? a.name : `${a.name} (uploading…)`;
    li.append(document.createTextNode(label));
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "chip-remove";
    remove.textContent = "×";
    remove.setAttribute("aria-label", "Remove " + a.name);
    remove.addEventListener("click", () => {
      state.attachments = state.attachments.filter((x) => x !== a);
      renderAttachments();
      ui.prompt.focus();
    });
    li.append(remove);
    ui.attachments.append(li);
  }
}

function attachFiles(files) {
  for (const file of files) {
    const entry = { name: file.name, id: null, error: null, done: false };
    entry.promise = api.upload(file).then(
      (stored) => {
        entry.id = stored.id;
        entry.done = true;
        renderAttachments();
      },
      (e) => {
        entry.error = e.message;
        renderAttachments();
        if (e instanceof api.ApiError && e.status === 401) needKey();
      },
    );
    state.attachments.push(entry);
  }
  renderAttachments();
}

// ---- sending and streaming ----

function setRunning(controller) {
  state.running = controller;
  ui.send.hidden = !!controller;
  ui.stop.hidden = !controller;
}

async function send() {
  if (state.running) return;
  const text = ui.prompt.value.trim();
  if (!text && !state.attachments.length) return;
  if (!ui.model.value) {
    if (!(await loadModels()) || !ui.model.value) return;
  }
  clearNotice();
  const pending = state.attachments;
  await Promise.all(pending.map((a) => a.promise));
  const files = pending.filter((a) => a.id);
  if (files.length < pending.length) {
    showNotice("Some files could not be uploaded; remove them or attach them again.");
    return;
  }
  const fileNames = files.map((f) => f.name);
  const view = state.view;
  if (!state.conversation) {
    try {
      const created = await api.postJson("/v1/conversations", {});
      state.conversation = created.id;
      store.addConversation(created.id, titleOf(text, fileNames));
      store.setCurrent(created.id);
      renderList();
    } catch (e) {
      failed(e, "The conversation could not be started");
      return;
    }
  }
  state.attachments = [];
  renderAttachments();
  ui.prompt.value = "";
  resizePrompt();
  add(userMessage(text, fileNames));
  scrollToEnd();

  const content = [];
  if (text) content.push({ type: "input_text", text });
  for (const f of files) content.push({ type: "input_file", file_id: f.id, filename: f.name });
  const body = {
    model: ui.model.value,
    conversation: state.conversation,
    input: [{ type: "message", role: "user", content }],
    tools: hostedTools(),
  };
  const controller = new AbortController();
  setRunning(controller);
  setStatus("Answering…");
  const turn = { blocks: new Map(), containers: new Set(), final: null, error: null };
  try {
    for await (const event of api.streamResponse(body, controller.signal)) {
      if (view !== state.view) break;
      handle(event, turn);
    }
    if (view === state.view) await finishTurn(turn, view);
  } catch (e) {
    if (view !== state.view) {
      // Another conversation is on the page now; this one's end is not shown there.
    } else if (e.name === "AbortError") {
      stopTurn(turn);
    } else {
      stopTurn(turn, "");
      if (e instanceof api.ApiError && e.status === 401) needKey();
      else add(errorLine(e.message));
      setStatus("Failed.");
    }
  } finally {
    setRunning(null);
    ui.prompt.focus();
  }
}

function handle(event, turn) {
  const type = String(event.type || "");
  const block = turn.blocks.get(event.output_index);
  const follow = nearBottom();
  if (type === "response.output_item.added" && event.item) {
    const item = event.item;
    const made = item.type === "message" ? new AnswerText() : new ToolBlock(item);
    turn.blocks.set(event.output_index, made);
    add(made.el);
  } else if (type === "response.output_text.delta" && block instanceof AnswerText) {
    block.append(String(event.delta || ""));
  } else if (type === "response.output_text.done" && block instanceof AnswerText) {
    block.set(String(event.text || ""));
  } else if (type === "response.reasoning_text.delta" && block instanceof ToolBlock) {
    block.appendReasoning(String(event.delta || ""));
  } else if (type === "response.code_interpreter_call_code.done" && block instanceof ToolBlock) {
    block.code(String(event.code || ""));
  } else if (type === "response.output_item.done" && event.item) {
    if (block instanceof AnswerText) {
      const text = (event.item.content || []).map((p) => (p && p.text) || "").join("");
      block.set(text);
      block.finish();
    } else if (block instanceof ToolBlock) {
      block.update(event.item);
    }
    if (event.item.container_id) turn.containers.add(event.item.container_id);
  } else if (/^response\.(completed|incomplete|failed)$/.test(type)) {
    turn.final = event.response || {};
  } else if (type === "error") {
    turn.error = (event.error && event.error.message) || event.message || "The response failed.";
  } else if (block instanceof ToolBlock) {
    // Progress of a tool call: response.code_interpreter_call.interpreting and the like.
    const m = /\.(in_progress|interpreting|searching|generating|completed|failed)$/.exec(type);
    if (m) block.status(m[1]);
  }
  if (follow) requestAnimationFrame(scrollToEnd);
}

async function finishTurn(turn, view) {
  for (const block of turn.blocks.values()) {
    if (block instanceof AnswerText && block.el.getAttribute("aria-busy") === "true") block.finish();
  }
  const final = turn.final;
  if (turn.error) add(errorLine(turn.error));
  if (!final) {
    if (!turn.error) add(errorLine("The answer ended early (the connection closed)."));
    setStatus("Failed.");
  } else if (final.status === "failed") {
    add(errorLine((final.error && final.error.message) || "The response failed."));
    setStatus("Failed.");
  } else if (final.status === "incomplete") {
    const reason = (final.incomplete_details && final.incomplete_details.reason) || "a limit";
    add(errorLine(`The answer was cut short (${reason.replace(/_/g, " ")}).`));
    setStatus("Cut short.");
  } else {
    setStatus("Done.");
  }
  for (const container of turn.containers) await showFiles(container, view);
}

function stopTurn(turn, note = "Stopped.") {
  let answered = false;
  for (const block of turn.blocks.values()) {
    if (block instanceof AnswerText) {
      answered = true;
      if (block.el.getAttribute("aria-busy") === "true") block.finish(note);
    } else if (block instanceof ToolBlock && !["completed", "failed"].includes(block.item.status)) {
      block.status("incomplete");
    }
  }
  if (note && !answered) add(errorLine(note)).classList.add("stopped");
  if (note) setStatus(note);
}

function resizePrompt() {
  const lines = ui.prompt.value.split("\n").length;
  ui.prompt.rows = Math.max(1, Math.min(8, lines));
}

// ---- wiring ----

function start() {
  ui.key.value = store.getKey();
  const tools = store.tools();
  ui.toolCode.checked = tools.code;
  ui.toolSearch.checked = tools.search;
  ui.toolImage.checked = tools.image;

  ui.composer.addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  ui.prompt.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  ui.prompt.addEventListener("input", resizePrompt);
  ui.stop.addEventListener("click", () => state.running && state.running.abort());
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    if (state.running) {
      e.preventDefault();
      state.running.abort();
    } else if (document.body.classList.contains("menu-open")) {
      setMenu(false);
      ui.menu.focus();
    }
  });
  ui.attach.addEventListener("change", () => {
    attachFiles(Array.from(ui.attach.files || []));
    ui.attach.value = "";
    ui.prompt.focus();
  });
  ui.keyForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    store.setKey(ui.key.value.trim());
    clearNotice();
    if (await loadModels()) {
      setStatus("Key saved.");
      setMenu(false);
      if (state.conversation && ui.log.childElementCount <= 1) openConversation(state.conversation);
      ui.prompt.focus();
    }
  });
  ui.model.addEventListener("change", () => store.setModel(ui.model.value));
  for (const box of [ui.toolCode, ui.toolSearch, ui.toolImage]) box.addEventListener("change", saveTools);
  ui.newButton.addEventListener("click", newConversation);
  ui.newTop.addEventListener("click", newConversation);
  ui.menu.addEventListener("click", () => setMenu(!document.body.classList.contains("menu-open")));

  renderList();
  loadModels().then((ok) => {
    if (ok && state.conversation) openConversation(state.conversation);
  });
  ui.prompt.focus();
}

start();
