#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::Cell;
use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::*;

thread_local! {
    /// Makes this thread's trees resolve by the fallback walk, as on kernels without `openat2`.
    pub(super) static FORCE_WALK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `test` once with each resolver.
fn both(test: impl Fn(&str)) {
    for (walk, label) in [(false, "openat2"), (true, "walk")] {
        FORCE_WALK.with(|f| f.set(walk));
        test(label);
    }
    FORCE_WALK.with(|f| f.set(false));
}

const L: WalkLimits = WalkLimits {
    max_entries: 100,
    max_depth: 8,
};

fn read(tree: &Tree, rel: &str) -> io::Result<String> {
    let mut s = String::new();
    tree.open_regular(rel)?.read_to_string(&mut s)?;
    Ok(s)
}

#[test]
fn files_are_read_below_the_root_and_links_anywhere_on_the_way_are_refused() {
    both(|how| {
        let d = tempfile::tempdir().unwrap();
        let host = d.path().join("host");
        std::fs::create_dir_all(host.join("etc")).unwrap();
        std::fs::write(host.join("etc/shadow"), "HOST").unwrap();
        let out = d.path().join("outputs");
        std::fs::create_dir_all(out.join("real/etc")).unwrap();
        std::fs::write(out.join("real/etc/shadow"), "decoy").unwrap();
        std::fs::write(out.join("top.txt"), "top").unwrap();
        symlink(&host, out.join("z")).unwrap();
        symlink(host.join("etc/shadow"), out.join("leaf")).unwrap();
        symlink("real", out.join("relative")).unwrap();
        let tree = Tree::open(&out).unwrap();
        assert_eq!(read(&tree, "top.txt").unwrap(), "top", "{how}");
        assert_eq!(read(&tree, "./real//etc/shadow").unwrap(), "decoy", "{how}");
        for refused in [
            "z/etc/shadow",
            "leaf",
            "relative/etc/shadow",
            "../host/etc/shadow",
            "real/../../host/etc/shadow",
            "/etc/passwd",
            "",
            "real",
        ] {
            assert!(tree.open_regular(refused).is_err(), "{how}: {refused:?}");
        }
        // A FIFO is refused without blocking.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            out.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        assert!(tree.open_regular("fifo").is_err(), "{how}");
        // The root itself a link: not opened.
        assert!(Tree::open(&out.join("z")).is_err(), "{how}");
        assert!(tree.dir("z").is_err(), "{how}");
        assert_eq!(
            read(&tree.dir("real").unwrap(), "etc/shadow").unwrap(),
            "decoy"
        );
    });
}

#[test]
fn reads_are_capped() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("big"), vec![b'x'; 100]).unwrap();
    let tree = Tree::open(d.path()).unwrap();
    assert_eq!(tree.read_regular("big", 100).unwrap().len(), 100);
    assert!(tree.read_regular("big", 99).is_err());
}

#[test]
fn new_files_never_follow_or_overwrite() {
    both(|how| {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(ws.join("downloads")).unwrap();
        let tree = Tree::open(&ws).unwrap();
        tree.create_new("downloads/a.png", 0o600)
            .unwrap()
            .write_all(b"png")
            .unwrap();
        assert_eq!(std::fs::read(ws.join("downloads/a.png")).unwrap(), b"png");
        assert!(tree.create_new("downloads/a.png", 0o600).is_err(), "{how}");
        symlink(elsewhere.join("x"), ws.join("downloads/b.png")).unwrap();
        assert!(tree.create_new("downloads/b.png", 0o600).is_err(), "{how}");
        // The folder swapped for a link.
        std::fs::rename(ws.join("downloads"), ws.join("old")).unwrap();
        symlink(&elsewhere, ws.join("downloads")).unwrap();
        assert!(tree.create_new("downloads/c.png", 0o600).is_err(), "{how}");
        assert!(tree.dir_or_create("downloads", 0o755).is_err(), "{how}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{how}");
        assert!(tree.exists("downloads"));
        assert!(!tree.exists("downloads/c.png"));
        // A created folder is a tree of its own.
        let fresh = tree.dir_or_create("fresh", 0o700).unwrap();
        fresh.create_new("f", 0o600).unwrap();
        assert!(ws.join("fresh/f").is_file());
    });
}

#[test]
fn replace_file_removes_what_was_planted_instead() {
    let d = tempfile::tempdir().unwrap();
    let host = d.path().join("bashrc");
    std::fs::write(&host, "host").unwrap();
    let ws = d.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    symlink(&host, ws.join("marker")).unwrap();
    let tree = Tree::open(&ws).unwrap();
    tree.replace_file("marker", 0o644)
        .unwrap()
        .write_all(b"ours")
        .unwrap();
    assert_eq!(std::fs::read_to_string(&host).unwrap(), "host");
    assert_eq!(std::fs::read_to_string(ws.join("marker")).unwrap(), "ours");
    std::fs::remove_file(ws.join("marker")).unwrap();
    std::fs::create_dir_all(ws.join("marker/deep")).unwrap();
    tree.replace_file("marker", 0o644).unwrap();
    assert!(ws.join("marker").is_file());
}

#[test]
fn listing_never_follows_links() {
    let d = tempfile::tempdir().unwrap();
    let secret = d.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(secret.join("id_rsa"), "key").unwrap();
    let out = d.path().join("outputs");
    std::fs::create_dir_all(out.join("sub")).unwrap();
    std::fs::write(out.join("a.txt"), "a").unwrap();
    std::fs::write(out.join("sub/b.txt"), "bb").unwrap();
    symlink(&secret, out.join("link")).unwrap();
    symlink(secret.join("id_rsa"), out.join("file-link")).unwrap();
    let tree = Tree::open(&out).unwrap();
    let files = tree.regular_files(L);
    let mut names: Vec<String> = files
        .keys()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "sub/b.txt"]);
    assert_eq!(files[Path::new("sub/b.txt")].0, 2);
    let mut entries = tree.entries().unwrap();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let kinds: Vec<(&str, FileType)> = entries.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    assert_eq!(
        kinds,
        [
            ("a.txt", FileType::RegularFile),
            ("file-link", FileType::Symlink),
            ("link", FileType::Symlink),
            ("sub", FileType::Directory)
        ]
    );
}

#[test]
fn walks_and_usage_are_bounded() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..50 {
        std::fs::write(d.path().join(format!("f{i}")), vec![b'x'; 5000]).unwrap();
    }
    let tree = Tree::open(d.path()).unwrap();
    let few = WalkLimits {
        max_entries: 10,
        max_depth: 8,
    };
    assert_eq!(tree.regular_files(few).len(), 10);
    assert!(tree.usage(few).truncated);
    let all = tree.usage(L);
    assert!(!all.truncated);
    assert_eq!(all.entries, 50);
    // 50 files of 5,000 bytes take at least 4 KiB blocks each.
    assert!(all.bytes >= 50 * 4096, "{all:?}");
    let mut deep = d.path().to_path_buf();
    for i in 0..12 {
        deep = deep.join(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("bottom.txt"), "x").unwrap();
    assert!(!tree
        .regular_files(L)
        .keys()
        .any(|p| p.ends_with("bottom.txt")));
}

#[test]
fn removal_takes_deep_trees_and_never_follows_links() {
    both(|how| {
        let d = tempfile::tempdir().unwrap();
        let host = d.path().join("host");
        std::fs::create_dir(&host).unwrap();
        std::fs::write(host.join("keep"), "host").unwrap();
        let ws = d.path().join("ws");
        let mut deep = ws.join("victim");
        for i in 0..(REMOVE_MAX_DEPTH * 2 + 5) {
            deep = deep.join(format!("{}", i % 10));
            if i % 7 == 0 {
                std::fs::create_dir_all(&deep).unwrap();
                symlink(&host, deep.join("to-host")).unwrap();
                std::fs::write(deep.join("f"), "f").unwrap();
            }
        }
        std::fs::create_dir_all(&deep).unwrap();
        symlink(&host, ws.join("link")).unwrap();
        let tree = Tree::open(&ws).unwrap();
        tree.remove("victim").unwrap();
        tree.remove("link").unwrap();
        assert!(!ws.join("victim").exists(), "{how}");
        assert_eq!(std::fs::read_dir(&ws).unwrap().count(), 0, "{how}");
        assert_eq!(std::fs::read_to_string(host.join("keep")).unwrap(), "host");
        assert!(tree.remove("missing").is_ok());
        assert!(tree.remove("../host").is_err());
    });
}

/// Sandboxed code swapping a folder for a link to the host while the host reads below it (the
/// attack of issue 34: `outputs/z` ↔ `outputs/zlink` exchanged as fast as possible): every read
/// answers the decoy or an error, never the host file.
#[test]
fn a_folder_swapped_for_a_link_during_reads_never_leads_outside() {
    both(|how| {
        let d = tempfile::tempdir().unwrap();
        let host = d.path().join("host");
        std::fs::create_dir_all(host.join("etc")).unwrap();
        std::fs::write(host.join("etc/shadow"), "HOST SECRET").unwrap();
        let out = d.path().join("outputs");
        std::fs::create_dir_all(out.join("z/etc")).unwrap();
        std::fs::write(out.join("z/etc/shadow"), "decoy").unwrap();
        symlink(&host, out.join("zlink")).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, out) = (stop.clone(), out.clone());
            std::thread::spawn(move || {
                let dir =
                    rustix::fs::openat(rustix::fs::CWD, &out, DIR_FLAGS, Mode::empty()).unwrap();
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        &dir,
                        "z",
                        &dir,
                        "zlink",
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        let tree = Tree::open(&out).unwrap();
        let (mut decoys, mut refused) = (0, 0);
        for _ in 0..20_000 {
            match read(&tree, "z/etc/shadow") {
                Ok(text) => {
                    assert_eq!(text, "decoy", "{how}: a host file was read");
                    decoys += 1;
                }
                Err(_) => refused += 1,
            }
            let listed = tree.regular_files(L);
            assert!(
                listed
                    .keys()
                    .all(|p| p == Path::new("z/etc/shadow") || p == Path::new("zlink/etc/shadow")),
                "{how}: {listed:?}"
            );
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 100, "{how}: the swapper ran {swaps} times");
        // Both outcomes happen: the race was real, and the decoy beside the link is still read.
        assert!(
            decoys > 0 && refused > 0,
            "{how}: {decoys} decoys, {refused} refused"
        );
    });
}
