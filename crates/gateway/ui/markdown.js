// A small Markdown renderer for model output, which is untrusted: every piece of text becomes a
// text node and every element is created by name here, so nothing in the input is ever parsed as
// HTML (`<script>` or `<img onerror=…>` in an answer are shown as the characters they are).
// It covers what chat answers use: paragraphs, headings, emphasis, code spans and fenced code
// (highlighted), lists (nested), block quotes, tables, rules and links (http, https and mailto
// only; images are shown as links, never loaded). Text that is still streaming renders too: an
// unclosed fence is a code block up to the end.

import { highlight } from "./highlight.js";

const MAX_DEPTH = 12;
// Beyond this a paragraph is shown as it is: inline parsing is not worth a slow page.
const MAX_INLINE = 20000;

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:([ \t]+)(.*))?$/;
const TABLE_RULE = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

function el(tag, className) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  return node;
}

function text(value) {
  return document.createTextNode(value);
}

/** The rendered Markdown as a fragment. */
export function renderMarkdown(source) {
  const lines = String(source).replace(/\r\n?/g, "\n").replace(/\t/g, "    ").split("\n");
  const out = document.createDocumentFragment();
  blocks(lines, out, 0);
  return out;
}

function isBlank(line) {
  return /^\s*$/.test(line);
}

function startsBlock(line) {
  return (
    FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line)
  );
}

function blocks(lines, out, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }
    if (depth > MAX_DEPTH) {
      const p = el("p");
      p.append(text(lines.slice(i).join("\n")));
      out.append(p);
      return;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      i = fence(lines, i, m, out);
    } else if ((m = HEADING.exec(line))) {
      const h = el("h" + m[1].length);
      inline(m[2] || "", h, depth);
      out.append(h);
      i++;
    } else if (RULE.test(line)) {
      out.append(el("hr"));
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        inner.push(m[1]);
        i++;
      }
      const quote = el("blockquote");
      blocks(inner, quote, depth + 1);
      out.append(quote);
    } else if (ITEM.test(line)) {
      i = list(lines, i, out, depth);
    } else if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
      i = table(lines, i, out, depth);
    } else {
      const para = [];
      while (i < lines.length && !isBlank(lines[i]) && (para.length === 0 || !startsBlock(lines[i]))) {
        para.push(lines[i].trim());
        i++;
      }
      const p = el("p");
      inline(para.join("\n"), p, depth);
      out.append(p);
    }
  }
}

function fence(lines, start, m, out) {
  const [marker, lang] = [m[1], m[2]];
  const body = [];
  let i = start + 1;
  for (; i < lines.length; i++) {
    const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[i]);
    if (close && close[1][0] === marker[0] && close[1].length >= marker.length) {
      i++;
      break;
    }
    body.push(lines[i]);
  }
  out.append(codeBlock(body.join("\n"), lang));
  return i;
}

/** A fenced code block: a bar with the language and a copy button, and the highlighted code. */
export function codeBlock(code, lang) {
  const box = el("div", "codeblock");
  const bar = el("div", "codebar");
  const name = el("span", "codelang");
  name.textContent = lang || "code";
  const copy = el("button", "copy");
  copy.type = "button";
  copy.textContent = "Copy";
  copy.setAttribute("aria-label", "Copy code");
  copy.addEventListener("click", () => {
    navigator.clipboard?.writeText(code).then(
      () => {
        copy.textContent = "Copied";
        setTimeout(() => (copy.textContent = "Copy"), 1500);
      },
      () => {},
    );
  });
  bar.append(name, copy);
  const pre = el("pre");
  const codeEl = el("code");
  if (lang) codeEl.dataset.lang = lang;
  codeEl.append(highlight(code, lang));
  pre.append(codeEl);
  box.append(bar, pre);
  return box;
}

function indentOf(line) {
  return line.length - line.trimStart().length;
}

function list(lines, start, out, depth) {
  const first = ITEM.exec(lines[start]);
  const base = first[1].length;
  const ordered = /\d/.test(first[2]);
  const listEl = el(ordered ? "ol" : "ul");
  if (ordered) {
    const n = parseInt(first[2], 10);
    if (n !== 1) listEl.start = n;
  }
  const items = [];
  let loose = false;
  let i = start;
  let content = 0;
  while (i < lines.length) {
    const line = lines[i];
    const m = ITEM.exec(line);
    if (m && m[1].length < base + 2 && m[1].length >= base - 1 && /\d/.test(m[2]) === ordered) {
      const gap = m[3] ? Math.min(m[3].length, 4) : 1;
      content = m[1].length + m[2].length + gap;
      items.push([m[4] || ""]);
      i++;
      continue;
    }
    if (m && m[1].length <= base) break;
    const item = items[items.length - 1];
    if (isBlank(line)) {
      let j = i + 1;
      while (j < lines.length && isBlank(lines[j])) j++;
      if (j >= lines.length) break;
      const next = ITEM.exec(lines[j]);
      const sibling = next && next[1].length < base + 2 && /\d/.test(next[2]) === ordered;
      if (indentOf(lines[j]) >= content || sibling) {
        loose = true;
        for (; i < j; i++) item.push("");
        continue;
      }
      break;
    }
    const indent = indentOf(line);
    if (indent >= Math.min(content, base + 2)) {
      // The item's own content, or a list nested a little less deeply than its text.
      item.push(line.slice(Math.min(indent, content)));
    } else if (!isBlank(item[item.length - 1]) && !startsBlock(line)) {
      // A lazy continuation of the item's paragraph.
      item.push(line.trim());
    } else {
      break;
    }
    i++;
  }
  for (const itemLines of items) {
    const li = el("li");
    const inner = document.createDocumentFragment();
    blocks(itemLines, inner, depth + 1);
    if (!loose) {
      // A tight list: paragraphs in items show without their own spacing.
      for (const node of Array.from(inner.childNodes)) {
        if (node.nodeName === "P") {
          node.replaceWith(...Array.from(node.childNodes));
        }
      }
    }
    li.append(inner);
    listEl.append(li);
  }
  out.append(listEl);
  return i;
}

function splitRow(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  const cells = [];
  let cell = "";
  let inCode = false;
  for (let i = 0; i < row.length; i++) {
    const c = row[i];
    if (c === "\\" && row[i + 1] === "|") {
      cell += "|";
      i++;
    } else if (c === "`") {
      inCode = !inCode;
      cell += c;
    } else if (c === "|" && !inCode) {
      cells.push(cell.trim());
      cell = "";
    } else {
      cell += c;
    }
  }
  cells.push(cell.trim());
  return cells;
}

function table(lines, start, out, depth) {
  const head = splitRow(lines[start]);
  const aligns = splitRow(lines[start + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : "",
  );
  const wrap = el("div", "tablewrap");
  const tableEl = el("table");
  const thead = el("thead");
  const headRow = el("tr");
  head.forEach((cell, k) => {
    const th = el("th");
    if (aligns[k]) th.className = "align-" + aligns[k];
    inline(cell, th, depth);
    headRow.append(th);
  });
  thead.append(headRow);
  const tbody = el("tbody");
  let i = start + 2;
  while (i < lines.length && !isBlank(lines[i]) && lines[i].includes("|")) {
    const tr = el("tr");
    const cells = splitRow(lines[i]);
    for (let k = 0; k < head.length; k++) {
      const td = el("td");
      if (aligns[k]) td.className = "align-" + aligns[k];
      inline(cells[k] || "", td, depth);
      tr.append(td);
    }
    tbody.append(tr);
    i++;
  }
  tableEl.append(thead, tbody);
  wrap.append(tableEl);
  out.append(wrap);
  return i;
}

/** A link target the page may point at: absolute http, https or mailto; anything else is not. */
export function safeUrl(raw) {
  try {
    const url = new URL(raw.trim());
    if (url.protocol === "http:" || url.protocol === "https:" || url.protocol === "mailto:") {
      return url.href;
    }
  } catch {
    // Not an absolute URL.
  }
  return null;
}

function link(href, into) {
  const a = el("a");
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer nofollow";
  into.append(a);
  return a;
}

const PUNCT = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/;
const WORD = /[\p{L}\p{N}]/u;
const BARE_URL = /^https?:\/\/[^\s<>]*[^\s<>.,;:!?'")\]*_~]/;

/** Inline Markdown of `src` appended to `into`. */
function inline(src, into, depth) {
  if (src.length > MAX_INLINE || depth > MAX_DEPTH) {
    into.append(text(src));
    return;
  }
  let plain = "";
  const flush = () => {
    if (plain) into.append(text(plain));
    plain = "";
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === "\\" && i + 1 < src.length && PUNCT.test(src[i + 1])) {
      plain += src[i + 1];
      i += 2;
      continue;
    }
    if (c === "\n") {
      flush();
      into.append(el("br"));
      i++;
      continue;
    }
    if (c === "`") {
      let n = 1;
      while (src[i + n] === "`") n++;
      const fence = "`".repeat(n);
      let end = src.indexOf(fence, i + n);
      while (end >= 0 && src[end + n] === "`") {
        let skip = end;
        while (src[skip] === "`") skip++;
        end = src.indexOf(fence, skip);
      }
      if (end >= 0) {
        flush();
        let body = src.slice(i + n, end).replace(/\n/g, " ");
        if (/^ .* $/.test(body) && body.trim()) body = body.slice(1, -1);
        const code = el("code");
        code.textContent = body;
        into.append(code);
        i = end + n;
      } else {
        plain += fence;
        i += n;
      }
      continue;
    }
    if (c === "*" || c === "_" || c === "~") {
      const used = emphasis(src, i, into, depth, flush);
      if (used > 0) {
        i = used;
        continue;
      }
    }
    if (c === "!" && src[i + 1] === "[") {
      const parsed = linkAt(src, i + 1);
      if (parsed) {
        flush();
        const href = safeUrl(parsed.url);
        const label = "image: " + (parsed.label || parsed.url);
        if (href) link(href, into).textContent = label;
        else into.append(text(label));
        i = parsed.end;
        continue;
      }
    }
    if (c === "[") {
      const parsed = linkAt(src, i);
      if (parsed) {
        flush();
        const href = safeUrl(parsed.url);
        if (href) inline(parsed.label, link(href, into), depth + 1);
        else inline(parsed.label, into, depth + 1);
        i = parsed.end;
        continue;
      }
    }
    if (c === "<") {
      const m = /^<((?:https?|mailto):[^\s<>]+)>/.exec(src.slice(i));
      const href = m && safeUrl(m[1]);
      if (href) {
        flush();
        link(href, into).textContent = m[1];
        i += m[0].length;
        continue;
      }
    }
    if (c === "h" && !WORD.test(src[i - 1] || "")) {
      const m = BARE_URL.exec(src.slice(i, i + 2048));
      const href = m && safeUrl(m[0]);
      if (href) {
        flush();
        link(href, into).textContent = m[0];
        i += m[0].length;
        continue;
      }
    }
    plain += c;
    i++;
  }
  flush();
}

/**
 * Emphasis at `i` (`*em*`, `**strong**`, `***both***`, the same with `_` between words, and
 * `~~struck~~`): appends it and returns the index after it, or 0 when the run there opens
 * nothing.
 */
function emphasis(src, i, into, depth, flush) {
  const c = src[i];
  let n = 1;
  while (src[i + n] === c) n++;
  const after = src[i + n] || "";
  const before = src[i - 1] || "";
  if (!after || /\s/.test(after)) return 0;
  // Not inside a word: `snake_case` and `2*3*4` are written as they are.
  if (c !== "~" && WORD.test(before)) return 0;
  if (c === "~" && n !== 2) return 0;
  const size = c === "~" ? 2 : Math.min(n, 3);
  const run = c.repeat(size);
  let from = i + size;
  for (;;) {
    const end = src.indexOf(run, from);
    if (end < 0) return 0;
    const prev = src[end - 1];
    const next = src[end + size] || "";
    const closes =
      end > i + size &&
      !/\s/.test(prev) &&
      prev !== c &&
      src[end + size] !== c &&
      !(c === "_" && WORD.test(next));
    if (closes) {
      flush();
      const inner = src.slice(i + size, end);
      let node;
      if (c === "~") node = el("del");
      else if (size === 1) node = el("em");
      else if (size === 2) node = el("strong");
      else {
        node = el("strong");
        const em = el("em");
        node.append(em);
        inline(inner, em, depth + 1);
        into.append(node);
        return end + size;
      }
      inline(inner, node, depth + 1);
      into.append(node);
      return end + size;
    }
    from = end + 1;
  }
}

/** `[label](url "title")` at `i`: its parts and the index after it, or null. */
function linkAt(src, i) {
  let depthLevel = 0;
  let j = i;
  for (; j < src.length; j++) {
    const c = src[j];
    if (c === "\\") j++;
    else if (c === "[") depthLevel++;
    else if (c === "]" && --depthLevel === 0) break;
    else if (c === "\n" && src[j + 1] === "\n") return null;
  }
  if (j >= src.length || src[j + 1] !== "(") return null;
  const label = src.slice(i + 1, j);
  let k = j + 2;
  while (src[k] === " ") k++;
  let url = "";
  if (src[k] === "<") {
    const close = src.indexOf(">", k);
    if (close < 0) return null;
    url = src.slice(k + 1, close);
    k = close + 1;
  } else {
    let parens = 0;
    for (; k < src.length; k++) {
      const c = src[k];
      if (/\s/.test(c)) break;
      if (c === "(") parens++;
      else if (c === ")") {
        if (parens === 0) break;
        parens--;
      }
      url += c;
    }
  }
  while (src[k] === " ") k++;
  const title = /^("[^"]*"|'[^']*'|\([^)]*\))\s*/.exec(src.slice(k));
  if (title) k += title[0].length;
  if (src[k] !== ")") return null;
  return { label, url, end: k + 1 };
}
