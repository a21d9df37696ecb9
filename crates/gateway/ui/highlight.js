// A tiny code highlighter: comments, strings, numbers and keywords become spans (built as text
// nodes, never parsed as HTML). It knows a few languages' comment styles and keywords; anything
// else gets a general guess. Good enough to read code at a glance, not a parser.

const WORDS = {
  python:
    "False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case print self",
  js:
    "async await break case catch class const continue debugger default delete do else export extends false finally for function if import in instanceof let new null of return super switch this throw true try typeof undefined var void while with yield",
  rust:
    "as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while Some None Ok Err",
  c:
    "auto break case char const continue default do double else enum extern float for goto if inline int long register return short signed sizeof static struct switch typedef union unsigned void volatile while bool true false class public private protected new delete this namespace template typename using nullptr func package import var type interface map chan go defer range select",
  shell:
    "if then else elif fi for while until do done case esac in function return local export echo cd exit set unset readonly shift source",
  sql:
    "select from where and or not insert into values update set delete create table drop alter index join left right inner outer on group by order having limit offset as distinct null is in like between union all case when then else end primary key references",
};

const LANGS = {
  python: { words: "python", line: ["#"], triple: true },
  py: "python",
  python3: "python",
  js: { words: "js", line: ["//"], block: true, backtick: true },
  javascript: "js",
  mjs: "js",
  ts: "js",
  typescript: "js",
  json: { words: "js", line: [], block: false },
  rust: { words: "rust", line: ["//"], block: true },
  rs: "rust",
  c: { words: "c", line: ["//"], block: true },
  cpp: "c",
  "c++": "c",
  java: "c",
  go: "c",
  sh: { words: "shell", line: ["#"] },
  bash: "sh",
  shell: "sh",
  zsh: "sh",
  console: "sh",
  toml: { words: "shell", line: ["#"] },
  yaml: "toml",
  yml: "toml",
  sql: { words: "sql", line: ["--"], block: true, caseless: true },
};

const GUESS = { words: "python", line: ["#", "//"], block: true, triple: true };

function language(name) {
  let lang = LANGS[(name || "").toLowerCase()];
  if (typeof lang === "string") lang = LANGS[lang];
  return lang || GUESS;
}

const sets = new Map();
function wordSet(lang) {
  const key = lang.words + (lang.caseless ? "/i" : "");
  if (!sets.has(key)) {
    const words = WORDS[lang.words].split(" ");
    sets.set(key, new Set(lang.caseless ? words.map((w) => w.toLowerCase()) : words));
  }
  return sets.get(key);
}

/** The highlighted code as a fragment of text nodes and `span.tok-*` elements. */
export function highlight(code, languageName) {
  const lang = language(languageName);
  const words = wordSet(lang);
  const out = document.createDocumentFragment();
  let plain = "";
  const flush = () => {
    if (plain) out.append(document.createTextNode(plain));
    plain = "";
  };
  const token = (kind, text) => {
    flush();
    const span = document.createElement("span");
    span.className = "tok-" + kind;
    span.textContent = text;
    out.append(span);
  };
  let i = 0;
  while (i < code.length) {
    const rest = code.slice(i, i + 3);
    const c = code[i];
    const lineComment = lang.line.find((m) => code.startsWith(m, i));
    if (lineComment) {
      const end = code.indexOf("\n", i);
      const stop = end < 0 ? code.length : end;
      token("com", code.slice(i, stop));
      i = stop;
    } else if (lang.block && code.startsWith("/*", i)) {
      const end = code.indexOf("*/", i + 2);
      const stop = end < 0 ? code.length : end + 2;
      token("com", code.slice(i, stop));
      i = stop;
    } else if (lang.triple && (rest === '"""' || rest === "'''")) {
      const end = code.indexOf(rest, i + 3);
      const stop = end < 0 ? code.length : end + 3;
      token("str", code.slice(i, stop));
      i = stop;
    } else if (c === '"' || c === "'" || (c === "`" && lang.backtick)) {
      let j = i + 1;
      while (j < code.length && code[j] !== c && (code[j] !== "\n" || c === "`")) {
        j += code[j] === "\\" ? 2 : 1;
      }
      const stop = Math.min(j + 1, code.length);
      token("str", code.slice(i, stop));
      i = stop;
    } else if (/[0-9]/.test(c) && !/[\w$]/.test(code[i - 1] || "")) {
      const m = /^(0x[0-9a-fA-F_]+|[0-9][0-9_]*(\.[0-9_]+)?([eE][+-]?[0-9]+)?)/.exec(code.slice(i));
      token("num", m[0]);
      i += m[0].length;
    } else if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][\w$]*/.exec(code.slice(i));
      const word = m[0];
      if (words.has(lang.caseless ? word.toLowerCase() : word)) token("kw", word);
      else plain += word;
      i += word.length;
    } else {
      plain += c;
      i += 1;
    }
  }
  flush();
  return out;
}
