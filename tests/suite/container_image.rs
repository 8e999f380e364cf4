//! The binary for containers and other machines: the static build (`cargo build --profile dist
//! --target x86_64-unknown-linux-musl`, which `.ci/run` makes and names in
//! `LOCKSMITH_TEST_STATIC`) is a stripped ELF with no program interpreter and no shared
//! library; the repository's `Containerfile` makes an image of it with `podman build`, in
//! which it runs alone (`FROM scratch`): `--version`, and a `--scan` of a volume. An
//! application image that copies it in as the README says (`COPY --from=locksmith
//! /usr/bin/locksmith /usr/bin/locksmith`, on busybox, with none of this host's libraries)
//! runs `locksmith start` as its entrypoint through a `podman kill` and `podman start`.
//!
//! Needs root and `podman runc busybox-static`, and the static binary; skips with the reason
//! otherwise, and fails instead under CI.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::podman::{IMAGE, Podman};
use crate::util::{self, wait_for};

/// The image the repository's Containerfile makes here.
const LOCKSMITH_IMAGE: &str = "localhost/locksmith:test";

/// Where the Containerfile takes the binary from, in its build context.
const IN_CONTEXT: &str = "target/x86_64-unknown-linux-musl/dist/locksmith";

/// The static binary, or `None` after saying why the test skips.
fn static_binary() -> Option<PathBuf> {
    match std::env::var_os("LOCKSMITH_TEST_STATIC") {
        Some(p) if Path::new(&p).is_file() => Some(PathBuf::from(p)),
        Some(p) => {
            util::skip(format!(
                "LOCKSMITH_TEST_STATIC names {}, which is no file",
                Path::new(&p).display()
            ));
            None
        }
        None => {
            util::skip(
                "no static binary: build it with `cargo build --profile dist --target x86_64-unknown-linux-musl` and name it in LOCKSMITH_TEST_STATIC (.ci/run does)",
            );
            None
        }
    }
}

/// What an ELF64 (little-endian) file's headers say: whether it names a program interpreter
/// (`PT_INTERP`: it is dynamically linked) and whether it has a symbol table (`SHT_SYMTAB`: it
/// is not stripped).
fn elf_facts(bytes: &[u8]) -> (bool, bool) {
    assert_eq!(&bytes[..4], b"\x7fELF", "an ELF file");
    assert_eq!(bytes[4], 2, "64-bit");
    assert_eq!(bytes[5], 1, "little-endian");
    let u16_at = |o: usize| u16::from_le_bytes(bytes[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let (phoff, shoff) = (u64_at(0x20), u64_at(0x28));
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    let (shentsize, shnum) = (u16_at(0x3A), u16_at(0x3C));
    let interp = (0..phnum).any(|i| u32_at(phoff + i * phentsize) == 3);
    let symtab = (0..shnum).any(|i| u32_at(shoff + i * shentsize + 4) == 2);
    (interp, symtab)
}

/// `podman build` of `containerfile` (text) in a context directory holding `files`.
fn build(pm: &Podman, tag: &str, containerfile: &str, files: &[(&str, &Path)]) {
    let context = pm
        .path()
        .join(format!("context-{}", tag.replace(['/', ':'], "-")));
    std::fs::create_dir_all(&context).unwrap();
    std::fs::write(context.join("Containerfile"), containerfile).unwrap();
    for (to, from) in files {
        let to = context.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, &to).unwrap();
    }
    let out = pm.run(&[
        "build",
        "-q",
        "--network",
        "none",
        "-t",
        tag,
        "-f",
        &context.join("Containerfile").to_string_lossy(),
        &context.to_string_lossy(),
    ]);
    assert!(
        out.status.success(),
        "podman build {tag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_static_binary_runs_alone_in_an_image_and_as_an_entrypoint_copied_from_it() {
    let Some(bin) = static_binary() else {
        return;
    };
    let bytes = std::fs::read(&bin).unwrap();
    let (interp, symtab) = elf_facts(&bytes);
    assert!(
        !interp,
        "{} names a program interpreter: not static",
        bin.display()
    );
    assert!(
        !symtab,
        "{} has a symbol table: not stripped",
        bin.display()
    );
    assert!(
        bytes.len() < 12 << 20,
        "{} is {} bytes",
        bin.display(),
        bytes.len()
    );

    let Some(pm) = Podman::or_skip("the static binary in an image") else {
        return;
    };
    // The repository's Containerfile, as it is.
    let containerfile =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Containerfile"))
            .unwrap();
    assert!(containerfile.contains("FROM scratch"), "{containerfile}");
    build(&pm, LOCKSMITH_IMAGE, &containerfile, &[(IN_CONTEXT, &bin)]);

    let out = pm.run(&[
        "run",
        "--rm",
        "--network",
        "none",
        LOCKSMITH_IMAGE,
        "--version",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("locksmith {}", env!("CARGO_PKG_VERSION"))
    );

    // A scan of a volume, in the image alone: a kernel-lock file nobody locks, and a pid file
    // whose verdict the report gives.
    let data = pm.path().join("data");
    std::fs::create_dir_all(data.join("cargo")).unwrap();
    std::fs::write(data.join("cargo/.package-cache"), "").unwrap();
    std::fs::write(data.join("app.pid"), "4194303\n").unwrap();
    let volume = format!("{}:/data", data.display());
    let out = pm.run(&[
        "run",
        "--rm",
        "--network",
        "none",
        "-v",
        &volume,
        LOCKSMITH_IMAGE,
        "--scan",
        "--json",
        "/data",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let locks = report["locks"].as_array().unwrap();
    let verdict_of = |path: &str| {
        locks
            .iter()
            .find(|l| l["path"] == path)
            .unwrap_or_else(|| panic!("{path} not reported: {report}"))["verdict"]
            .clone()
    };
    assert_eq!(verdict_of("/data/cargo/.package-cache"), "free");
    assert!(verdict_of("/data/app.pid").is_string());
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");

    // An application image on busybox with the binary copied in as the README says, and
    // nothing of this host lent: `locksmith start` as its entrypoint, killed and started again.
    let app = "localhost/locksmith-app-static:test";
    let keep = pm.path().join("keep");
    std::fs::write(&keep, "").unwrap();
    build(
        &pm,
        app,
        &format!(
            "FROM {IMAGE}\nCOPY --from={LOCKSMITH_IMAGE} /usr/bin/locksmith /usr/bin/locksmith\n\
             COPY app /app\n"
        ),
        &[("app/tmp/pids/.keep", &keep)],
    );
    assert!(pm.run(&["volume", "create", "app-tmp"]).status.success());
    let service = "echo $$ > /app/tmp/pids/server.pid; echo run >> /app/tmp/runs; exec sleep 1000";
    let out = pm.run(&[
        "run",
        "-d",
        "--network",
        "none",
        "--name",
        "web",
        "-v",
        "app-tmp:/app/tmp",
        app,
        "locksmith",
        "start",
        "--wait",
        "30",
        "/app/tmp/pids/server.pid",
        "--",
        "sh",
        "-c",
        service,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = |pm: &Podman| {
        let out = pm.run(&["exec", "web", "cat", "/app/tmp/runs"]);
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    wait_for("the service to run", || (runs(&pm) == 1).then_some(()));
    pm.kill("web");
    std::thread::sleep(Duration::from_millis(100));
    let out = pm.run(&["start", "web"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = std::time::Instant::now() + util::DEADLINE;
    while runs(&pm) != 2 {
        if std::time::Instant::now() > deadline {
            let out = pm.run(&["logs", "web"]);
            panic!(
                "the service did not run again: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = pm.run(&["exec", "web", "cat", "/proc/1/comm"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "sleep");
    let out = pm.run(&["logs", "web"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("removed /app/tmp/pids/server.pid"), "{log}");
}
