"""Drives the gateway's /v1/responses with Codex CLI (`codex exec`), unmodified.

Usage: codex_exec.py BASE_URL MODEL
  BASE_URL             the gateway's base URL with /v1, e.g. http://127.0.0.1:PORT/v1
  TOOLBRIDGE_CODEX     the codex executable (scripts/test.sh exports it: the native binary inside
                       the npm package @openai/codex)
  TOOLBRIDGE_TEST_KEY  the API key to send (Codex sends it as `Authorization: Bearer …`)

The task: a fresh work folder holds note.txt ("The secret word is pelican."); Codex is asked to
"Run `cat note.txt` and tell me what it says." Codex streams every request (stream: true,
store: false, the whole history each time).

What the upstream behind the gateway must do (two model calls):
  1. answer the first request with a call of Codex's shell tool: the function `exec_command`
     with arguments {"cmd": "cat note.txt"};
  2. answer the second request, whose input ends with that function_call and its
     function_call_output (Codex's wrapper text around the file's content: "Chunk ID: …\n
     Wall time: …\nProcess exited with code 0\n…Output:\nThe secret word is pelican.\n"),
     with a text that contains the file's content, e.g. "The note says: The secret word is
     pelican."

Prints one JSON object: codex_version, exit_code, final_message (Codex's last agent message),
commands (each command Codex ran, with its exit code and output), errors (error items and
events Codex reported), event_types (the `codex exec --json` event types in order) and
answer_has_file_content. Exits with Codex's exit code when it failed, 3 when the answer lacks
the file's content, 2 on a set-up problem.

Nothing leaves 127.0.0.1: the config below turns off what Codex 0.171 otherwise reaches
(the curated-plugin sync: `git ls-remote` of github.com/openai/plugins, api.github.com and
chatgpt.com; OTLP metrics to ab.chatgpt.com), and Codex makes no login, model-list or update
request for a custom provider with an API key. docs/notes/responses-clients.md has the details.
"""

import json
import os
import subprocess
import sys
import tempfile

FILE_CONTENT = "The secret word is pelican."
PROMPT = "Run `cat note.txt` and tell me what it says."

CONFIG = """\
model = {model}
model_provider = "toolbridge"
# No approval prompts and no sandbox: the gateway is under test here, not Codex's sandbox
# (its bubblewrap helper also refuses to install under /tmp, where this CODEX_HOME lives).
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.toolbridge]
name = "toolbridge"
base_url = {base_url}
env_key = "TOOLBRIDGE_CODEX_KEY"
wire_api = "responses"
# Fail at once instead of retrying (5 stream retries and 4 request retries by default).
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 30000

# OTLP metrics to ab.chatgpt.com: either of these stops them.
[analytics]
enabled = false

[otel]
metrics_exporter = "none"
exporter = "none"
trace_exporter = "none"

# The curated-plugin sync at start (git ls-remote github.com, api.github.com, chatgpt.com).
[features]
plugins = false
"""


def toml_string(s):
    return json.dumps(s)  # a JSON string literal is a valid TOML basic string


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    base_url, model = sys.argv[1], sys.argv[2]
    codex = os.environ.get("TOOLBRIDGE_CODEX")
    if not codex or not os.access(codex, os.X_OK):
        print("codex driver: TOOLBRIDGE_CODEX is not an executable (run scripts/test.sh)", file=sys.stderr)
        return 2
    version = subprocess.run([codex, "--version"], capture_output=True, text=True, check=False).stdout.strip()

    with tempfile.TemporaryDirectory(prefix="toolbridge-codex-") as tmp:
        home = os.path.join(tmp, "codex-home")
        work = os.path.join(tmp, "work")
        os.makedirs(home)
        os.makedirs(work)
        with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
            f.write(CONFIG.format(model=toml_string(model), base_url=toml_string(base_url)))
        with open(os.path.join(work, "note.txt"), "w", encoding="utf-8") as f:
            f.write(FILE_CONTENT + "\n")
        last_message = os.path.join(tmp, "last-message.txt")
        env = dict(os.environ)
        env.update(
            CODEX_HOME=home,
            TOOLBRIDGE_CODEX_KEY=os.environ.get("TOOLBRIDGE_TEST_KEY", "unused"),
            NO_COLOR="1",
        )
        # Codex would use these instead of the config's provider, or send our requests elsewhere.
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            env.pop(name, None)
        env["NO_PROXY"] = "127.0.0.1,localhost"
        cmd = [
            codex,
            "exec",
            "--json",
            "--strict-config",
            "--skip-git-repo-check",
            "--ephemeral",
            "--color",
            "never",
            "-C",
            work,
            "-o",
            last_message,
            PROMPT,
        ]
        try:
            run = subprocess.run(
                cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False
            )
        except subprocess.TimeoutExpired as e:
            print(json.dumps({"codex_version": version, "exit_code": None, "error": f"timed out: {e}"}))
            return 1
        events, commands, errors, messages = [], [], [], []
        for line in run.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            events.append(event.get("type"))
            item = event.get("item") or {}
            if event.get("type") == "item.completed":
                if item.get("type") == "command_execution":
                    commands.append(
                        {
                            "command": item.get("command"),
                            "exit_code": item.get("exit_code"),
                            "output": item.get("aggregated_output"),
                        }
                    )
                elif item.get("type") == "agent_message":
                    messages.append(item.get("text", ""))
                elif item.get("type") == "error":
                    errors.append(item.get("message"))
            elif event.get("type") in ("error", "turn.failed"):
                errors.append(event.get("message") or (event.get("error") or {}).get("message"))
        final = messages[-1] if messages else None
        if os.path.exists(last_message):
            with open(last_message, encoding="utf-8") as f:
                final = f.read() or final
    result = {
        "codex_version": version,
        "exit_code": run.returncode,
        "final_message": final,
        "answer_has_file_content": bool(final and FILE_CONTENT in final),
        "commands": commands,
        "errors": errors,
        "event_types": events,
        "stderr_tail": run.stderr.strip().splitlines()[-5:],
    }
    print(json.dumps(result, indent=1))
    if run.returncode != 0:
        return run.returncode
    return 0 if result["answer_has_file_content"] else 3


if __name__ == "__main__":
    sys.exit(main())
