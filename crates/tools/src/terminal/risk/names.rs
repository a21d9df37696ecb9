//! Lists of program and variable names the classifier knows.

/// Variables that make programs run code of the setter's choice.
pub(super) fn code_loading_variable(name: &str) -> bool {
    #[rustfmt::skip]
    const NAMES: &[&str] = &[
        "BASH_ENV", "ENV", "PATH", "IFS", "PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS",
        "PAGER", "MANPAGER", "EDITOR", "VISUAL", "NODE_OPTIONS", "LESSOPEN", "LESSCLOSE",
        "GCONV_PATH", "HOME", "CDPATH", "GLOBIGNORE", "BASH_XTRACEFD", "HISTFILE", "PS0", "PS1",
        "PS2", "PS3", "MAILPATH", "LESSKEY", "SYSTEMD_PAGER", "BROWSER", "SSH_ASKPASS",
        "SUDO_ASKPASS",
    ];
    const PREFIXES: &[&str] = &[
        "LD_",
        "PYTHON",
        "PERL",
        "RUBY",
        "GIT_",
        "BASH_FUNC_",
        "NODE_",
        "LESS",
        "JAVA_TOOL",
        "_JAVA_OPTIONS",
        "DYLD_",
    ];
    NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Variables that may prefix a read-only command and keep it low (locale, time zone, terminal
/// size, colours); `PAGER=cat` and `GIT_PAGER=cat` as well. Any other prefix is asked about.
pub(super) fn harmless_variable(name: &str, value: &str) -> bool {
    const NAMES: &[&str] = &[
        "LANG", "LANGUAGE", "TZ", "COLUMNS", "LINES", "NO_COLOR", "TERM", "CLICOLOR",
    ];
    NAMES.contains(&name)
        || (name.starts_with("LC_") && name[3..].chars().all(|c| c.is_ascii_uppercase()))
        || (matches!(name, "PAGER" | "GIT_PAGER") && value == "cat")
}

#[rustfmt::skip]
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh",
    "rbash",
];

pub(super) fn is_interpreter(name: &str) -> bool {
    #[rustfmt::skip]
    const NAMES: &[&str] = &[
        "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "tclsh", "wish",
        "Rscript", "R", "osascript", "pwsh", "powershell", "julia", "irb", "groovy", "jshell",
    ];
    NAMES.contains(&name) || name.starts_with("python") || name.starts_with("pypy")
}

/// Read-only commands whose arguments may be computed at run time without changing that.
#[rustfmt::skip]
pub(super) const READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "printf", "du",
    "df", "stat", "which", "whereis", "type", "diff", "cmp", "comm", "cut", "tr", "nl", "tac",
    "rev", "basename", "dirname", "realpath", "readlink", "id", "whoami", "groups", "uname",
    "printenv", "true", "false", ":", "test", "[", "[[", "seq", "sleep", "jq", "md5sum", "sha1sum",
    "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "base64", "od",
    "hexdump", "strings", "column", "fold", "fmt", "expand", "unexpand", "paste", "join", "nproc",
    "free", "uptime", "locale", "getconf", "tty", "yes", "read", "wait", "jobs", "exit", "return",
    "shift", "unset", "set", "shopt", "ps", "pgrep", "lscpu", "cd", "pushd", "popd", "dirs",
    "look", "zcat", "zgrep", "less", "more",
];

/// Wrappers and builtins that judge computed arguments themselves (or whose flags cannot make
/// them dangerous).
#[rustfmt::skip]
pub(super) const JUDGE_OWN_ARGUMENTS: &[&str] = &[
    "command", "builtin", "nohup", "busybox", "env", "nice", "time", "timeout", "stdbuf", "setsid",
    "xargs", "watch", "trap", "alias", "export", "declare", "typeset", "local", "readonly", "sudo",
    "doas", "su", "eval", "exec", "source", ".",
];

/// Builtins whose arguments bash evaluates as arithmetic or variable names, where a quoted
/// `$(…)` still runs (`[[ 'a[$(id)]' -eq 1 ]]`).
#[rustfmt::skip]
pub(super) const EVALUATES_NAMES: &[&str] = &[
    "test", "[", "[[", "let", "declare", "typeset", "local", "export", "readonly", "read", "unset",
    "getopts", "mapfile", "readarray", "wait",
];
