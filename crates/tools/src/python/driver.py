# The python_execute driver: one persistent interpreter inside the sandbox, speaking JSON lines
# with the host (crates/tools/src/python/session.rs).
#
# Requests on stdin, one per line:
#   {"id": N, "code": "..."}   run a cell
#   {"interrupt": N}           interrupt cell N if it is still running (SIGINT to the main thread)
# Replies on the original stdout, one per cell:
#   {"id", "stdout", "stderr", "value", "error", "error_type", "interrupted", "cpu_limit",
#    "truncated"}
# The first line written is {"ready": true, "python": "<version>"}.
#
# Configuration comes as one JSON argument (sys.argv[1]): max_output_bytes, cpu_secs (per cell;
# 0 = no per-cell limit), cpu_message and omitted_note (model-facing texts, owned by texts.rs).

import ast
import builtins
import fcntl
import json
import linecache
import math
import os
import queue
import resource
import signal
import sys
import threading
import traceback
import types

DRIVER_FILE = sys._getframe().f_code.co_filename
CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
MAX_OUTPUT = int(CONFIG.get("max_output_bytes", 100_000))
CPU_SECS = int(CONFIG.get("cpu_secs", 0))
CPU_MESSAGE = CONFIG.get("cpu_message", "CPU time limit exceeded")
OMITTED_NOTE = CONFIG.get("omitted_note", "\n... (<BYTES> bytes omitted) ...\n")

DRIVER_PID = os.getpid()


def _high_fd(fd):
    """A close-on-exec copy of `fd` at a high number, out of the way of code that writes to small
    fds it did not open (the originals are then pointed elsewhere)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    base = 1000 if soft == resource.RLIM_INFINITY else max(10, min(1000, soft - 32))
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, base)
    except (OSError, AttributeError):
        return os.dup(fd)


# The protocol gets private copies of fds 0 and 1 at high numbers (close-on-exec, so subprocesses
# of a cell never see them); fd 0 becomes /dev/null, so code that reads stdin gets EOF instead of
# eating requests, and between cells fd 1 points at stderr, so stray writes from background
# threads land in the host's log instead of corrupting the protocol.
_proto_in = os.fdopen(_high_fd(0), "r", encoding="utf-8")
_proto_out = os.fdopen(_high_fd(1), "w", encoding="utf-8")
_devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(_devnull, 0)
os.close(_devnull)
os.dup2(2, 1)
_write_lock = threading.Lock()
# Line-buffered, so a cell's prints land in order with what its subprocesses write to the same fd.
for _stream in (sys.stdout, sys.stderr):
    try:
        _stream.reconfigure(line_buffering=True)
    except (AttributeError, ValueError):
        pass


def safe(text):
    """`text` without lone surrogates (which JSON readers reject): they become `\\udcff`."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def send(message):
    if os.getpid() != DRIVER_PID:
        # A forked child of a cell: only the driver itself answers.
        return
    message = {k: safe(v) if isinstance(v, str) else v for k, v in message.items()}
    line = json.dumps(message, ensure_ascii=True)
    with _write_lock:
        _proto_out.write(line + "\n")
        _proto_out.flush()


class CPUTimeLimitExceeded(BaseException):
    """Raised in a cell when it used up its CPU budget (BaseException: `except Exception` in the
    cell must not swallow it)."""


class _State:
    running = None  # id of the running cell
    in_cell = False  # the main thread is inside the cell's code
    pending = False  # an interrupt for the running cell arrived
    fired = False  # an interrupt was raised in the cell (it may have been caught there)
    lock = threading.Lock()


STATE = _State()
MAIN_IDENT = threading.main_thread().ident


def on_sigint(signum, frame):
    if STATE.in_cell:
        STATE.in_cell = False
        STATE.pending = False  # consumed
        STATE.fired = True
        raise KeyboardInterrupt


def on_sigxcpu(signum, frame):
    # The kernel repeats SIGXCPU every second past the soft limit; move it a little so the driver
    # can finish the reply before the next one (the hard limit stays where the sandbox put it).
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if soft != resource.RLIM_INFINITY:
        bumped = soft + 5
        if hard != resource.RLIM_INFINITY:
            bumped = min(bumped, hard)
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (bumped, hard))
        except (ValueError, OSError):
            pass
    if STATE.in_cell:
        STATE.in_cell = False
        raise CPUTimeLimitExceeded(CPU_MESSAGE)


def set_cpu_budget():
    if CPU_SECS <= 0:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime) + CPU_SECS
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


class Capture:
    """Points fd `fd` at a pipe for the duration of a cell and drains it in a thread, keeping the
    first and last halves of MAX_OUTPUT bytes."""

    def __init__(self, fd):
        self.fd = fd
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.lock = threading.Lock()
        self.half = MAX_OUTPUT // 2
        self.tail_keep = MAX_OUTPUT - self.half
        read_end, write_end = os.pipe()
        self.saved = os.dup(fd)
        os.dup2(write_end, fd)
        os.close(write_end)
        self.thread = threading.Thread(target=self._drain, args=(read_end,), daemon=True)
        self.thread.start()

    def _drain(self, read_end):
        try:
            while True:
                chunk = os.read(read_end, 65536)
                if not chunk:
                    break
                with self.lock:
                    self._add(chunk)
        finally:
            os.close(read_end)

    def _add(self, chunk):
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * self.tail_keep:
            del self.tail[: len(self.tail) - self.tail_keep]

    def finish(self):
        os.dup2(self.saved, self.fd)
        os.close(self.saved)
        # A background process started by the cell may keep the pipe open: take what came so far.
        self.thread.join(0.5)
        with self.lock:
            tail = bytes(self.tail[-self.tail_keep :]) if self.tail_keep else b""
            kept = len(self.head) + len(tail)
            omitted = self.total - kept
            text = self.head.decode("utf-8", "replace")
            if omitted > 0:
                text += OMITTED_NOTE.replace("<BYTES>", str(omitted))
            text += tail.decode("utf-8", "replace")
            return text, omitted > 0


def cap_text(text):
    data = safe(text).encode("utf-8")
    if len(data) <= MAX_OUTPUT:
        return text, False
    half = MAX_OUTPUT // 2
    omitted = len(data) - MAX_OUTPUT
    out = data[:half].decode("utf-8", "replace")
    out += OMITTED_NOTE.replace("<BYTES>", str(omitted))
    out += data[len(data) - (MAX_OUTPUT - half) :].decode("utf-8", "replace")
    return out, True


def cap_tail(text):
    """Like cap_text, but keeps only the end (a traceback's exception line is last)."""
    data = safe(text).encode("utf-8")
    if len(data) <= MAX_OUTPUT:
        return text, False
    omitted = len(data) - MAX_OUTPUT
    out = OMITTED_NOTE.replace("<BYTES>", str(omitted)).lstrip("\n")
    out += data[omitted:].decode("utf-8", "replace")
    return out, True


def guarded(fn):
    """Runs `fn` as part of the cell: an interrupt (or the CPU limit) raises in it. An interrupt
    that arrived while no cell code ran raises at once."""
    with STATE.lock:
        if STATE.pending:
            STATE.pending = False
            STATE.fired = True
            raise KeyboardInterrupt
        STATE.in_cell = True
    try:
        return fn()
    finally:
        STATE.in_cell = False


def fresh_streams():
    """Rebinds a closed (or missing) sys.stdout / sys.stderr to new writers on fds 1 / 2."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name, None)
        try:
            usable = stream is not None and not stream.closed
        except Exception:
            usable = False
        if not usable:
            setattr(
                sys,
                name,
                open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False,
                     buffering=1),
            )


def forked_child_exit(exc):
    """The end of a cell in a process the cell forked: never answer the host, just stop."""
    if exc is not None and not isinstance(exc, SystemExit):
        try:
            os.write(2, safe(format_error(exc)).encode("utf-8"))
        except BaseException:
            pass
    flush_std()
    os._exit(0 if exc is None else 1)


def format_error(exc):
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    # Frames of the driver itself are noise to the model; keep the cell's and the libraries'.
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if f.filename != DRIVER_FILE]
    )
    return "".join(te.format())


def flush_std():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


NAMESPACE_MODULE = types.ModuleType("__main__")
NAMESPACE_MODULE.__dict__["__builtins__"] = builtins
# Cells run in a module of their own registered as __main__, so classes they define pickle and
# `if __name__ == "__main__"` holds, while the driver's own names stay out of their way.
sys.modules["__main__"] = NAMESPACE_MODULE
NAMESPACE = NAMESPACE_MODULE.__dict__


def run_cell(cell_id, number, code):
    filename = "<cell %d>" % number
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    reply = {
        "id": cell_id,
        "stdout": "",
        "stderr": "",
        "value": None,
        "error": None,
        "error_type": None,
        "interrupted": False,
        "cpu_limit": False,
        "truncated": False,
    }
    flush_std()
    fresh_streams()
    out = Capture(1)
    err = Capture(2)
    signal.signal(signal.SIGINT, on_sigint)
    signal.signal(signal.SIGXCPU, on_sigxcpu)
    set_cpu_budget()
    failure = None
    value_text, t3 = None, False
    try:
        try:
            tree = ast.parse(code, filename, "exec")
        except SyntaxError as exc:
            reply["error_type"] = type(exc).__name__
            reply["error"] = "".join(traceback.format_exception_only(type(exc), exc))
            tree = ast.Module(body=[], type_ignores=[])
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        body = compile(tree, filename, "exec")
        tail = compile(last, filename, "eval") if last is not None else None

        def cell():
            # Everything the cell's code can make slow (its body, the value's repr, flushing
            # its streams) runs here, where an interrupt still reaches it.
            exec(body, NAMESPACE)
            shown = (None, False)
            if tail is not None:
                value = eval(tail, NAMESPACE)
                if value is not None:
                    NAMESPACE["_"] = value
                    shown = cap_text(repr(value))
            flush_std()
            return shown

        value_text, t3 = guarded(cell)
    except BaseException as exc:
        failure = exc
    if os.getpid() != DRIVER_PID:
        forked_child_exit(failure)
    if failure is not None:
        if isinstance(failure, KeyboardInterrupt):
            reply["interrupted"] = True
        if isinstance(failure, CPUTimeLimitExceeded):
            reply["cpu_limit"] = True
        reply["error_type"] = type(failure).__name__
        STATE.fired = False
        try:
            reply["error"] = guarded(lambda: format_error(failure))
            if STATE.fired:
                # The interrupt landed in the exception's own code and traceback swallowed it.
                reply["interrupted"] = True
        except BaseException as again:
            # Formatting the exception itself hung or failed: its name has to do.
            reply["error"] = type(failure).__name__ + "\n"
            if isinstance(again, KeyboardInterrupt):
                reply["interrupted"] = True
                reply["error"] += "KeyboardInterrupt\n"
        try:
            guarded(flush_std)
        except BaseException as again:
            if isinstance(again, KeyboardInterrupt):
                reply["interrupted"] = True
    with STATE.lock:
        STATE.running = None
        STATE.pending = False
    reply["stdout"], t1 = out.finish()
    reply["stderr"], t2 = err.finish()
    reply["value"] = value_text
    t4 = False
    if reply["error"] is not None:
        reply["error"], t4 = cap_tail(reply["error"])
    reply["truncated"] = t1 or t2 or t3 or t4
    if CPU_SECS > 0:
        # Outside cells the budget is the whole hard limit again (the driver's own bookkeeping
        # must never be the thing that trips it).
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
        except (ValueError, OSError):
            pass
    return reply


def reader(requests):
    for line in _proto_in:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "interrupt" in message:
            with STATE.lock:
                if STATE.running is not None and STATE.running == message["interrupt"]:
                    STATE.pending = True
                    signal.pthread_kill(MAIN_IDENT, signal.SIGINT)
        elif "code" in message:
            with STATE.lock:
                # Set here, not in the main thread, so an interrupt that follows its request
                # closely is never missed.
                STATE.running = message.get("id")
                STATE.pending = False
            requests.put(message)
    # The host is gone: nobody will read our results.
    os._exit(0)


def reap_forgotten_children():
    """Reaps the interpreter's children that have exited and that nothing will wait for: what a
    cell fork()ed and never waited for, and Popen objects dropped while running. Left alone, they
    stay zombies as long as the interpreter lives, each holding a slot of the sandbox's process
    budget. Children that a live subprocess.Popen or multiprocessing object still tracks are
    left to it, so their exit status is not lost."""
    subprocess = sys.modules.get("subprocess")
    cleanup = getattr(subprocess, "_cleanup", None)
    if cleanup is not None:
        try:
            cleanup()
        except Exception:
            pass
    try:
        zombies = [pid for pid in _child_pids() if _is_zombie(pid)]
    except OSError:
        return
    if not zombies:
        return
    tracked = _tracked_pids()
    for host_pid, pid in zombies:
        if pid in tracked:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
        except OSError:
            pass


def _child_pids():
    """The interpreter's children as /proc shows them (the host's pid under Landlock, whose /proc
    is the host's), with their pid in our own namespace."""
    found = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                listed = f.read().split()
        except OSError:
            # A thread that ended since the listing: its children are listed by the others.
            continue
        for host_pid in listed:
            found.append((host_pid, _own_pid(host_pid)))
    return found


def _own_pid(host_pid):
    try:
        with open(f"/proc/{host_pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except OSError:
        pass
    return int(host_pid)


def _is_zombie(child):
    try:
        with open(f"/proc/{child[0]}/stat") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rindex(")") + 2] == "Z"


def _tracked_pids():
    import gc

    kinds = []
    subprocess = sys.modules.get("subprocess")
    if subprocess is not None:
        kinds.append(subprocess.Popen)
    popen_fork = sys.modules.get("multiprocessing.popen_fork")
    if popen_fork is not None:
        kinds.append(popen_fork.Popen)
    if not kinds:
        return set()
    return {
        obj.pid
        for obj in gc.get_objects()
        if isinstance(obj, tuple(kinds)) and getattr(obj, "returncode", 0) is None
    }


def main():
    signal.signal(signal.SIGINT, on_sigint)
    requests = queue.Queue()
    threading.Thread(target=reader, args=(requests,), daemon=True).start()
    send({"ready": True, "python": sys.version.split()[0]})
    number = 0
    while True:
        message = requests.get()
        number += 1
        try:
            reply = run_cell(message.get("id"), number, str(message.get("code", "")))
        except KeyboardInterrupt:
            with STATE.lock:
                STATE.running = None
            reply = {
                "id": message.get("id"),
                "stdout": "",
                "stderr": "",
                "value": None,
                "error": "KeyboardInterrupt\n",
                "error_type": "KeyboardInterrupt",
                "interrupted": True,
                "cpu_limit": False,
                "truncated": False,
            }
        # After the cell, not before: between cells no interrupt is aimed at us.
        try:
            reap_forgotten_children()
        except BaseException:
            pass
        send(reply)


main()
