//! The judgement of one program by name: the table of known programs and their dangerous flags.

use toolbridge_agent::approval::CallRisk;

use super::args::{
    long_option, operands_skipping, option_value, short_group, skip_options, split_options,
};
use super::names::{code_loading_variable, is_interpreter, READ_ONLY, SHELLS};
use super::rules::{sed_in_place, sed_prints_lines};
use super::{classify_script, Ctx, Findings, Input};
use crate::terminal::shell::Word;

/// One invocation of a program, as the families judge it.
struct Invocation<'a> {
    name: &'a str,
    args: &'a [Word],
    /// The arguments' texts.
    texts: Vec<&'a str>,
    input: Input,
    /// Inherited from an `xargs` or `find -exec` around this command; wrappers pass it on to what
    /// they run.
    dynamic: bool,
}

/// A family of programs: judges the invocation and returns true if it knows the program's name.
type Family = fn(&mut Ctx, &mut Findings, &Invocation) -> bool;

/// The families in the order they are asked: the first that knows a name judges it. The order
/// matters where a name passes one family's test and falls to a later one (`printf -v` before the
/// read-only `printf`, the shells and interpreters before the names after them).
const FAMILIES: &[Family] = &[
    Ctx::privileged_or_evaluating,
    Ctx::wrappers,
    Ctx::shell_state,
    Ctx::evaluating_builtins,
    Ctx::interpreters,
    Ctx::destructive,
    Ctx::system_admin,
    Ctx::file_tools,
    Ctx::flag_writers,
    Ctx::archives,
    Ctx::package_managers,
    Ctx::read_only,
];

impl Ctx {
    /// Judges one program by name (after `--version`, which any program answers harmlessly) with
    /// the first family that knows it; an unknown name is unknown.
    pub(super) fn program(
        &mut self,
        f: &mut Findings,
        name: &str,
        args: &[Word],
        input: Input,
        dynamic: bool,
    ) {
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        if texts.as_slice() == ["--version"]
            || (name.starts_with("python") && matches!(texts.as_slice(), ["-V" | "-VV"]))
        {
            f.add(CallRisk::Low, format!("{name} --version"));
            return;
        }
        let invocation = Invocation {
            name,
            args,
            texts,
            input,
            dynamic,
        };
        if !FAMILIES.iter().any(|family| family(self, f, &invocation)) {
            f.add(
                CallRisk::Unknown,
                format!("{name} is not a program toolbridge knows"),
            );
        }
        if matches!(name, "cd" | "pushd" | "popd") {
            self.change_directory(args.first());
        }
    }

    /// Privilege changes and programs that run a string or a file as commands.
    fn privileged_or_evaluating(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::High;
        let &Invocation {
            name,
            ref texts,
            input,
            ..
        } = p;
        match name {
            "sudo" | "doas" | "su" | "pkexec" | "runuser" | "chroot" | "unshare" | "nsenter"
            | "setpriv" | "capsh" | "sg" | "newgrp" | "machinectl" | "systemd-run" => {
                f.add(High, format!("{name} runs a command with other privileges"));
            }
            "eval" => f.add(High, "eval runs a string as commands"),
            "exec" => f.add(High, "exec replaces the shell"),
            "source" | "." => self.source(f, texts, input),
            _ => return false,
        }
        true
    }

    /// Programs that run another program (`command`, `env`, `timeout`, `xargs`, …): what they run is
    /// judged.
    fn wrappers(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{Low, Unknown};
        let &Invocation {
            args,
            ref texts,
            input,
            dynamic,
            ..
        } = p;
        match p.name {
            "command" => {
                if texts
                    .iter()
                    .take_while(|t| t.starts_with('-'))
                    .any(|t| short_group(t).is_some_and(|g| g.contains('p')))
                {
                    f.add(Unknown, "command -p searches another PATH");
                } else if texts.iter().any(|t| matches!(*t, "-v" | "-V")) {
                    f.add(Low, "command -v looks a program up");
                } else {
                    let skip = skip_options(args, &[]);
                    self.rest(f, &args[skip..], input, dynamic);
                }
            }
            "builtin" => f.add(Unknown, "builtin runs a shell builtin bypassing functions"),
            "nohup" | "busybox" => self.rest(f, args, input, dynamic),
            "env" => self.env(f, args, input, dynamic),
            "nice" => {
                let skip = skip_options(args, &["-n", "--adjustment"]);
                self.rest(f, &args[skip..], input, dynamic);
            }
            "time" => {
                let skip = skip_options(args, &["-f", "--format", "-o", "--output"]);
                if let Some(out) = option_value(&args[..skip], &["-o", "--output"]) {
                    self.written(f, &out, "time writes to");
                }
                self.rest(f, &args[skip..], input, dynamic);
            }
            "timeout" => {
                let skip = skip_options(args, &["-s", "--signal", "-k", "--kill-after"]);
                let after = (skip + 1).min(args.len());
                self.rest(f, &args[after..], input, dynamic);
            }
            "stdbuf" => {
                let skip =
                    skip_options(args, &["-i", "-o", "-e", "--input", "--output", "--error"]);
                self.rest(f, &args[skip..], input, dynamic);
            }
            "setsid" => {
                let skip = skip_options(args, &[]);
                self.rest(f, &args[skip..], input, dynamic);
            }
            "xargs" => self.xargs(f, args, input),
            "watch" => self.watch(f, args),
            _ => return false,
        }
        true
    }

    /// Builtins that change the shell's state: traps, aliases, options, variables read from input.
    fn shell_state(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{Low, Unknown};
        let &Invocation {
            name,
            args,
            ref texts,
            ..
        } = p;
        match name {
            "trap" => {
                let code = args.iter().find(|a| !a.text.starts_with('-'));
                match code {
                    Some(c) if c.dynamic => {
                        f.add(Unknown, "trap runs a string computed at run time")
                    }
                    Some(c) => {
                        classify_script(f, &c.text, self.depth + 1, false);
                        f.add(Unknown, "trap sets commands that run later");
                    }
                    None => f.add(Low, "trap lists traps"),
                }
            }
            "alias" => {
                for a in args {
                    if let Some((_, value)) = a.text.split_once('=') {
                        classify_script(f, value, self.depth + 1, false);
                    }
                }
                if args.is_empty() {
                    f.add(Low, "alias lists aliases");
                } else {
                    f.add(Unknown, "alias changes what later commands run");
                }
            }
            "shopt" => {
                if texts
                    .iter()
                    .all(|t| !t.starts_with('-') || matches!(*t, "-p" | "-q"))
                {
                    f.add(Low, "shopt prints shell options");
                } else {
                    f.add(Unknown, "shopt changes how the shell reads commands");
                }
            }
            "set" => {
                if args.is_empty() {
                    f.add(Low, "set lists variables");
                } else {
                    f.add(Unknown, "set changes shell options or arguments");
                }
            }
            "read" | "mapfile" | "readarray" => {
                f.add(Unknown, format!("{name} sets variables from its input"));
            }
            "enable" | "hash" | "unalias" => {
                f.add(Unknown, format!("{name} changes what later commands run"));
            }
            _ => return false,
        }
        true
    }

    /// Builtins that evaluate their operands as arithmetic or variable names, or set variables.
    fn evaluating_builtins(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{High, Low, Unknown};
        let &Invocation {
            name,
            args,
            ref texts,
            ..
        } = p;
        match name {
            "printf" if texts.iter().any(|t| t.starts_with("-v")) => {
                f.add(Unknown, "printf -v sets a variable");
            }
            "[[" => {
                // `[[ x -eq 1 ]]` evaluates the variable x as arithmetic (`a[$(cmd)]` runs);
                // `-v a[i]` evaluates the subscript.
                const EVALUATES: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v", "-R"];
                if texts.iter().any(|t| EVALUATES.contains(t)) {
                    f.add(Unknown, "[[ evaluates operands as arithmetic");
                } else {
                    f.add(Low, "[[ (read-only)");
                }
            }
            "test" | "[" if texts.iter().any(|t| matches!(*t, "-v" | "-R")) => {
                f.add(Unknown, format!("{name} -v evaluates a subscript"));
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                if args
                    .iter()
                    .any(|a| a.text.contains('=') || a.text.starts_with(['-', '+']))
                {
                    f.add(
                        Unknown,
                        format!("{name} with a value or an attribute can evaluate code"),
                    );
                }
                for a in args {
                    let named = a.assignment_name().map_or(a.text.as_str(), |n| n);
                    if code_loading_variable(named) {
                        f.add(
                            High,
                            format!("sets {named}, which can make programs run other code"),
                        );
                    }
                }
                f.add(Low, format!("{name} sets shell variables"));
            }
            "let" => f.add(Unknown, "let evaluates arithmetic"),
            _ => return false,
        }
        true
    }

    /// Shells and interpreters (`bash -c`, `python script.py`, …).
    fn interpreters(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        let &Invocation { args, input, .. } = p;
        match p.name {
            n if SHELLS.contains(&n) => self.shell(f, n, args, input),
            n if is_interpreter(n) => self.interpreter(f, n, args, input),
            _ => return false,
        }
        true
    }

    /// Programs that delete files or change disks and file systems.
    fn destructive(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{High, Medium};
        let &Invocation { name, args, .. } = p;
        match name {
            "rm" => {
                let (opts, operands) = split_options(args);
                let recursive = opts.iter().any(|o| {
                    short_group(o).is_some_and(|g| g.contains(['r', 'R']))
                        || matches!(*o, "--recursive" | "--no-preserve-root")
                });
                if recursive {
                    f.add(High, "rm -r deletes whole directory trees");
                } else {
                    f.add(Medium, "rm deletes files");
                }
                for p in operands {
                    self.written(f, p, "rm deletes");
                }
            }
            "rmdir" | "unlink" => {
                f.add(Medium, format!("{name} deletes"));
                for p in split_options(args).1 {
                    self.written(f, p, "deletes");
                }
            }
            "shred" | "wipefs" => f.add(High, format!("{name} destroys data")),
            "dd" => f.add(High, "dd writes raw data"),
            n if n.starts_with("mkfs")
                || n.starts_with("fsck")
                || [
                    "mke2fs",
                    "mkswap",
                    "fdisk",
                    "sfdisk",
                    "cfdisk",
                    "parted",
                    "gdisk",
                    "sgdisk",
                    "blkdiscard",
                    "hdparm",
                    "losetup",
                    "cryptsetup",
                    "mount",
                    "umount",
                    "swapon",
                    "swapoff",
                ]
                .contains(&n) =>
            {
                f.add(High, format!("{n} changes disks or file systems"));
            }
            _ => return false,
        }
        true
    }

    /// Programs that change the machine: power, schedules, users, the kernel, processes,
    /// permissions.
    fn system_admin(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{High, Low, Medium, Unknown};
        let &Invocation {
            name,
            args,
            ref texts,
            ..
        } = p;
        match name {
            "shutdown" | "reboot" | "halt" | "poweroff" | "init" | "telinit" | "kexec" => {
                f.add(High, format!("{name} stops or restarts the machine"));
            }
            "systemctl" => {
                #[rustfmt::skip]
                const POWER: &[&str] = &[
                    "reboot", "poweroff", "halt", "kexec", "suspend", "hibernate", "rescue",
                    "emergency", "isolate", "default",
                ];
                if texts.iter().any(|t| POWER.contains(t)) {
                    f.add(High, "systemctl stops or restarts the machine");
                } else {
                    f.add(Unknown, "systemctl");
                }
            }
            "crontab" | "at" | "batch" => f.add(High, format!("{name} schedules commands")),
            "useradd" | "userdel" | "usermod" | "passwd" | "chpasswd" | "visudo" | "groupadd"
            | "groupdel" | "chattr" | "iptables" | "ip6tables" | "nft" | "ufw" | "insmod"
            | "rmmod" | "modprobe" | "killall5" => {
                f.add(High, format!("{name} changes the system"));
            }
            "sysctl" => {
                if texts.iter().any(|t| *t == "-w" || t.contains('=')) {
                    f.add(High, "sysctl changes the kernel");
                } else {
                    f.add(Low, "sysctl reads kernel settings");
                }
            }
            "kill" => self.kill(f, texts),
            "pkill" | "killall" => f.add(Medium, format!("{name} stops processes")),
            "chmod" | "chown" | "chgrp" => {
                let (opts, operands) = split_options(args);
                if opts
                    .iter()
                    .any(|o| short_group(o).is_some_and(|g| g.contains('R')) || *o == "--recursive")
                {
                    f.add(High, format!("{name} -R changes a whole tree"));
                } else {
                    f.add(Medium, format!("{name} changes permissions"));
                }
                for p in operands.iter().skip(1) {
                    self.written(f, p, &format!("{name} changes"));
                }
            }
            "setfacl" => f.add(Medium, "setfacl changes permissions"),
            _ => return false,
        }
        true
    }

    /// Programs that search or write files: `git`, `find`, `cp`, `sed`, ….
    fn file_tools(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{Low, Medium, Unknown};
        let &Invocation { name, args, .. } = p;
        match name {
            "git" => self.git(f, args),
            "find" => self.find(f, args),
            "fd" | "fdfind" => {
                let exec = args.iter().position(|a| {
                    matches!(a.text.as_str(), "-x" | "--exec" | "-X" | "--exec-batch")
                });
                match exec {
                    Some(i) => {
                        f.add(Medium, "fd --exec runs a command per match");
                        self.run(f, &args[i + 1..], Input::default(), true);
                    }
                    None => f.add(Low, "fd lists files"),
                }
            }
            "cp" | "mv" | "ln" | "install" => {
                f.add(Medium, format!("{name} writes files"));
                let target = option_value(args, &["-t", "--target-directory"])
                    .or_else(|| split_options(args).1.last().map(|w| (*w).clone()));
                if let Some(t) = target {
                    self.written(f, &t, &format!("{name} writes"));
                }
            }
            "touch" | "mkdir" | "truncate" | "tee" | "mktemp" | "mkfifo" => {
                f.add(Medium, format!("{name} writes files"));
                let with_values: &[&str] = match name {
                    "touch" => &["-d", "-r", "-t", "--date", "--reference"],
                    "mkdir" | "mkfifo" => &["-m", "--mode"],
                    "truncate" => &["-s", "-r", "--size", "--reference"],
                    "mktemp" => &["-p", "--tmpdir", "--suffix"],
                    _ => &[],
                };
                for p in operands_skipping(args, with_values) {
                    if name != "mktemp" {
                        self.written(f, p, &format!("{name} writes"));
                    }
                }
                if name == "mktemp" {
                    if let Some(d) = option_value(args, &["-p", "--tmpdir"]) {
                        self.written(f, &d, "mktemp writes");
                    }
                }
            }
            "patch" => {
                f.add(Medium, "patch edits files");
                if let Some(d) = option_value(args, &["-d", "--directory", "-o", "--output"]) {
                    self.written(f, &d, "patch writes");
                }
            }
            "sed" => {
                if args.iter().any(|a| sed_in_place(&a.text)) {
                    f.add(Medium, "sed -i edits files");
                    let operands =
                        operands_skipping(args, &["-e", "-f", "-l", "--expression", "--file"]);
                    let explicit_script = args.iter().any(|a| {
                        a.text.starts_with("--expression")
                            || a.text.starts_with("--file")
                            || short_group(&a.text).is_some_and(|g| g.starts_with(['e', 'f']))
                    });
                    let files = if explicit_script {
                        &operands[..]
                    } else {
                        operands.get(1..).unwrap_or(&[])
                    };
                    for p in files {
                        self.written(f, p, "sed -i edits");
                    }
                } else if sed_prints_lines(args) {
                    f.add(Low, "sed prints lines");
                } else {
                    f.add(Medium, "sed scripts can write files and run commands");
                }
            }
            "awk" | "gawk" | "mawk" | "nawk" => {
                f.add(Unknown, format!("{name} programs can run commands"));
            }
            _ => return false,
        }
        true
    }

    /// Readers that write a file, set something or run a program with the right flag.
    fn flag_writers(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{High, Low, Medium, Unknown};
        let &Invocation {
            name,
            args,
            ref texts,
            ..
        } = p;
        match name {
            "sort" => {
                if texts
                    .iter()
                    .any(|t| long_option(t, "--compress-program").is_some())
                {
                    f.add(High, "sort --compress-program runs a program");
                }
                match option_value(args, &["-o", "--output"]) {
                    Some(out) => {
                        f.add(Medium, "sort -o writes a file");
                        self.written(f, &out, "sort writes");
                    }
                    None => f.add(Low, "sort"),
                }
            }
            "uniq" => {
                let (_, operands) = split_options(args);
                match operands.get(1) {
                    Some(out) => {
                        f.add(Medium, "uniq writes its output file");
                        self.written(f, out, "uniq writes");
                    }
                    None => f.add(Low, "uniq"),
                }
            }
            "tree" => match option_value(args, &["-o"]) {
                Some(out) => {
                    f.add(Medium, "tree -o writes a file");
                    self.written(f, &out, "tree writes");
                }
                None => f.add(Low, "tree"),
            },
            "xxd" => {
                let (_, operands) = split_options(args);
                match operands.get(1) {
                    Some(out) => {
                        f.add(Medium, "xxd writes its output file");
                        self.written(f, out, "xxd writes");
                    }
                    None => f.add(Low, "xxd"),
                }
            }
            "file" => {
                if texts.contains(&"-C") {
                    f.add(Medium, "file -C writes a magic file");
                } else {
                    f.add(Low, "file");
                }
            }
            "date" => {
                if texts.iter().any(|t| *t == "-s" || t.starts_with("--set")) {
                    f.add(Medium, "date -s sets the clock");
                } else {
                    f.add(Low, "date");
                }
            }
            "hostname" => {
                if split_options(args).1.is_empty() {
                    f.add(Low, "hostname");
                } else {
                    f.add(Medium, "hostname sets the host name");
                }
            }
            "rg" => {
                if texts.iter().any(|t| t.starts_with("--pre")) {
                    f.add(Unknown, "rg --pre runs a program on every file");
                } else {
                    f.add(Low, "rg");
                }
            }
            _ => return false,
        }
        true
    }

    /// Archivers and compressors: listing is read-only, anything else writes.
    fn archives(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{High, Low, Medium};
        let &Invocation {
            name,
            args,
            ref texts,
            ..
        } = p;
        match name {
            "tar" => self.tar(f, args),
            "zip" => {
                if texts
                    .iter()
                    .any(|t| *t == "-TT" || t.starts_with("--unzip-command"))
                {
                    f.add(High, "zip -TT runs a program");
                } else {
                    f.add(Medium, "zip writes an archive");
                }
            }
            "unzip" => {
                if texts
                    .iter()
                    .any(|t| matches!(*t, "-l" | "-v" | "-t" | "-Z"))
                {
                    f.add(Low, "unzip lists an archive");
                } else {
                    f.add(Medium, "unzip writes files");
                    if let Some(d) = option_value(args, &["-d"]) {
                        self.written(f, &d, "unzip writes");
                    }
                }
            }
            "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "unzstd" | "lz4"
            | "7z" | "7za" => {
                if texts
                    .iter()
                    .any(|t| matches!(*t, "-l" | "-t" | "-c" | "--list" | "--test" | "--stdout"))
                {
                    f.add(Low, format!("{name} reads"));
                } else {
                    f.add(Medium, format!("{name} writes files"));
                }
            }
            _ => return false,
        }
        true
    }

    /// Package managers: installing runs the packages' scripts.
    fn package_managers(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        use CallRisk::{Low, Medium, Unknown};
        let &Invocation {
            name,
            args,
            ref texts,
            ..
        } = p;
        match name {
            "pip" | "pip3" => self.pip(f, args),
            "uv" => match texts.as_slice() {
                ["pip", ..] => self.pip(f, &args[1..]),
                _ => f.add(Unknown, "uv"),
            },
            "npm" | "pnpm" | "yarn" => {
                let sub = texts.iter().find(|t| !t.starts_with('-')).copied();
                match sub {
                    Some("install" | "i" | "ci" | "uninstall" | "remove" | "update" | "add") => {
                        f.add(
                            Medium,
                            format!("{name} installs packages (their scripts run)"),
                        );
                    }
                    Some("ls" | "list" | "view" | "info" | "outdated") => {
                        f.add(Low, format!("{name} lists packages"));
                    }
                    None if texts.contains(&"-v") => f.add(Low, format!("{name} -v")),
                    _ => f.add(Unknown, format!("{name} runs package scripts")),
                }
            }
            _ => return false,
        }
        true
    }

    /// The known read-only programs.
    fn read_only(&mut self, f: &mut Findings, p: &Invocation) -> bool {
        let known = READ_ONLY.contains(&p.name);
        if known {
            f.add(CallRisk::Low, format!("{} (read-only)", p.name));
        }
        known
    }
}
