// The pieces of a conversation on the page: the user's messages, the answer's text (Markdown,
// re-rendered as it streams) and tool activity as collapsible blocks that update live (code and
// its output, web searches, generated images, MCP and function calls), and the files code wrote.
// Everything the model or a tool produced goes in as text nodes or through renderMarkdown.

import { blob } from "./api.js";
import { codeBlock, renderMarkdown, safeUrl } from "./markdown.js";

function el(tag, className, textContent) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (textContent !== undefined) node.textContent = textContent;
  return node;
}

const STATUS = {
  in_progress: "running",
  interpreting: "running",
  searching: "searching",
  generating: "generating",
  completed: "done",
  failed: "failed",
  incomplete: "stopped",
  cancelled: "stopped",
};

/**
 * A file name as it may be shown: without the invisible characters that reorder or hide text
 * (bidirectional controls, zero-width characters and other format characters), so a name like
 * "invoice\u202Efdp.exe" cannot pass for "invoiceexe.pdf". The server strips them too.
 */
export function visibleName(name) {
  return String(name).replace(/[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFEFF\uFFA0\uFFF9-\uFFFB]|\uDB40[\uDC00-\uDFFF]/g, "");
}

/** One user message: its text and the names of the files attached to it. */
export function userMessage(textValue, fileNames) {
  const box = el("div", "msg user");
  box.append(el("div", "who visually-hidden", "You:"));
  const body = el("div", "bubble");
  if (textValue) body.append(el("div", "user-text", textValue));
  if (fileNames.length) {
    const list = el("ul", "chips");
    for (const name of fileNames) list.append(el("li", "chip", visibleName(name)));
    body.append(list);
  }
  box.append(body);
  return box;
}

/** The text and files of a stored user message item. */
export function userParts(item) {
  const texts = [];
  const files = [];
  const content = typeof item.content === "string" ? [{ type: "input_text", text: item.content }] : item.content || [];
  for (const part of content) {
    if (part.type === "input_text" && typeof part.text === "string") texts.push(part.text);
    else if (part.type === "input_file") files.push(part.filename || part.file_id || "file");
    else if (part.type === "input_image") files.push(part.filename || "image");
  }
  return { text: texts.join("\n"), files };
}

/** An answer's text: Markdown, rendered again at most once per frame while it streams. */
export class AnswerText {
  constructor() {
    this.el = el("div", "msg assistant");
    this.el.append(el("div", "who visually-hidden", "Assistant:"));
    this.body = el("div", "markdown");
    this.el.append(this.body);
    this.text = "";
    this.pending = false;
    this.el.setAttribute("aria-busy", "true");
  }

  append(delta) {
    this.text += delta;
    if (!this.pending) {
      this.pending = true;
      requestAnimationFrame(() => {
        this.pending = false;
        this.render();
      });
    }
  }

  set(value) {
    this.text = value;
    this.render();
  }

  render() {
    this.body.replaceChildren(renderMarkdown(this.text));
  }

  /** The text is complete; `note` (stopped, cut short) is shown under it. */
  finish(note) {
    this.render();
    this.el.setAttribute("aria-busy", "false");
    if (note) this.el.append(el("p", "note", note));
  }
}

/** A collapsible block for one tool call item, updated as its events and final item arrive. */
export class ToolBlock {
  constructor(item) {
    this.item = item;
    this.el = el("details", "tool tool-" + item.type.replace(/_/g, "-"));
    this.el.open = item.type !== "reasoning";
    const summary = el("summary");
    this.title = el("span", "tool-title");
    this.badge = el("span", "badge");
    summary.append(this.title, this.badge);
    this.body = el("div", "tool-body");
    this.el.append(summary, this.body);
    this.reasoning = "";
    this.update(item);
  }

  status(value) {
    const label = STATUS[value] || value || "";
    this.badge.textContent = label;
    this.badge.className = "badge " + (label ? "badge-" + label : "");
  }

  code(value) {
    if (this.item.type !== "code_interpreter_call") return;
    this.item = { ...this.item, code: value };
    this.update(this.item);
  }

  appendReasoning(delta) {
    this.reasoning += delta;
    this.body.replaceChildren(el("div", "reasoning-text", this.reasoning));
  }

  update(item) {
    this.item = item;
    const body = this.body;
    switch (item.type) {
      case "code_interpreter_call": {
        this.title.textContent = "Python";
        body.replaceChildren();
        if (item.code) body.append(codeBlock(item.code, "python"));
        const logs = (item.outputs || [])
          .filter((o) => o && o.type === "logs" && typeof o.logs === "string")
          .map((o) => o.logs)
          .join("\n");
        if (Array.isArray(item.outputs)) {
          body.append(el("div", "tool-label", "Output"));
          body.append(el("pre", "logs", logs || "(no output)"));
        }
        for (const o of item.outputs || []) {
          if (o && o.type === "image" && typeof o.url === "string" && o.url.startsWith("data:image/")) {
            const img = el("img", "generated");
            img.src = o.url;
            img.alt = "Image the code made";
            body.append(img);
          }
        }
        break;
      }
      case "web_search_call": {
        this.title.textContent = "Web search";
        const action = item.action || {};
        body.replaceChildren();
        if (action.type === "open_page" && typeof action.url === "string") {
          const line = el("p", "tool-line", "Opened ");
          const href = safeUrl(action.url);
          if (href) {
            const a = el("a", null, action.url);
            a.href = href;
            a.target = "_blank";
            a.rel = "noopener noreferrer nofollow";
            line.append(a);
          } else {
            line.append(document.createTextNode(action.url));
          }
          body.append(line);
        } else if (typeof action.query === "string" && action.query) {
          const line = el("p", "tool-line", "Searched for ");
          line.append(el("q", "query", action.query));
          body.append(line);
        }
        for (const source of action.sources || []) {
          const href = source && typeof source.url === "string" && safeUrl(source.url);
          if (href) {
            const a = el("a", "source", source.url);
            a.href = href;
            a.target = "_blank";
            a.rel = "noopener noreferrer nofollow";
            body.append(a);
          }
        }
        break;
      }
      case "image_generation_call": {
        this.title.textContent = "Image generation";
        body.replaceChildren();
        const src = imageDataUrl(item.result);
        if (src) {
          const img = el("img", "generated");
          img.src = src;
          img.alt = "Generated image";
          body.append(img);
        } else if (item.status === "failed") {
          body.append(el("p", "tool-line", "No image was made."));
        }
        break;
      }
      case "mcp_call":
      case "mcp_approval_request": {
        this.title.textContent = `${item.server_label || "MCP"} · ${item.name || "tool"}`;
        body.replaceChildren();
        if (item.arguments) {
          body.append(el("div", "tool-label", "Arguments"));
          body.append(el("pre", "logs", pretty(item.arguments)));
        }
        if (item.type === "mcp_approval_request") {
          body.append(el("p", "tool-line", "Waiting for approval (not supported on this page)."));
        }
        if (typeof item.output === "string") {
          body.append(el("div", "tool-label", "Result"));
          body.append(el("pre", "logs", item.output));
        }
        if (typeof item.error === "string" && item.error) {
          body.append(el("div", "tool-label", "Error"));
          body.append(el("pre", "logs", item.error));
        }
        break;
      }
      case "reasoning": {
        this.title.textContent = "Thinking";
        const parts = (item.content || item.summary || [])
          .map((p) => (p && typeof p.text === "string" ? p.text : ""))
          .join("");
        if (parts) this.reasoning = parts;
        body.replaceChildren(el("div", "reasoning-text", this.reasoning));
        break;
      }
      default: {
        this.title.textContent = item.name || item.type;
        body.replaceChildren();
        const args = item.arguments ?? item.input;
        if (typeof args === "string" && args) body.append(el("pre", "logs", pretty(args)));
      }
    }
    if (item.type !== "reasoning") this.status(item.status);
  }
}

function pretty(json) {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return String(json);
  }
}

/** A `data:` URL for base64 image bytes (the type read from the bytes), or null. */
export function imageDataUrl(b64) {
  if (typeof b64 !== "string" || !b64 || !/^[A-Za-z0-9+/=\s]+$/.test(b64)) return null;
  const clean = b64.replace(/\s+/g, "");
  const types = [
    ["iVBORw0KGgo", "image/png"],
    ["/9j/", "image/jpeg"],
    ["R0lGOD", "image/gif"],
    ["UklGR", "image/webp"],
  ];
  const found = types.find(([prefix]) => clean.startsWith(prefix));
  return found ? `data:${found[1]};base64,${clean}` : null;
}

const IMAGE_NAME = /\.(png|jpe?g|gif|webp)$/i;
// What image_generate writes (`image-<unix ms>-<i>-<hex>.<ext>`): its image generation block
// already shows it, so the file is listed for download without a second picture.
const GENERATED_NAME = /^image-\d{13}-\d+-[0-9a-f]+\.(png|jpe?g|webp)$/;

function sizeText(bytes) {
  if (!Number.isFinite(bytes)) return "";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The files code wrote (container file objects): a download button each, images shown inline.
 * Their bytes need the key, so they are fetched and shown from `blob:` URLs.
 */
export function filesBlock(files) {
  const box = el("div", "files");
  box.append(el("div", "tool-label", files.length === 1 ? "File" : "Files"));
  const list = el("ul", "file-list");
  for (const file of files) {
    const name = visibleName(String(file.path || file.id).split("/").pop());
    const url = `/v1/containers/${encodeURIComponent(file.container_id)}/files/${encodeURIComponent(file.id)}/content`;
    const li = el("li", "file");
    const info = el("span", "file-name", name);
    const size = el("span", "muted small", " " + sizeText(file.bytes));
    const button = el("button", "button small", "Download");
    button.type = "button";
    button.setAttribute("aria-label", "Download " + name);
    button.addEventListener("click", async () => {
      try {
        const data = await blob(url);
        const a = document.createElement("a");
        a.href = URL.createObjectURL(data);
        a.download = name;
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(a.href), 60000);
      } catch (e) {
        button.textContent = "Download failed";
        button.title = e.message;
      }
    });
    const row = el("div", "file-row");
    row.append(info, size, button);
    li.append(row);
    if (IMAGE_NAME.test(name) && !GENERATED_NAME.test(name)) {
      const img = el("img", "generated");
      img.alt = name;
      li.append(img);
      blob(url).then(
        (data) => {
          if (data.type.startsWith("image/")) img.src = URL.createObjectURL(data);
          else img.remove();
        },
        () => img.remove(),
      );
    }
    list.append(li);
  }
  box.append(list);
  return box;
}
