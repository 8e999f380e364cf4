//! The detail pane: a vim swap's unsaved changes, and scrolling to the end of its text.

use crate::tui::testkit::*;

#[test]
fn vim_swap_with_unsaved_changes_warns_and_shows_vim_r() {
    // The hint names the swap file, ours, naming the file beside it (as the report does).
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    std::fs::write(dir.join("notes.txt"), "old\n").unwrap();
    let swap = dir.join(".notes.txt.swp");
    let hint = format!("vim -r {}", swap.display());
    let mut f = vim_unsaved(swap.to_str().unwrap());
    let mut block0 = f.content.clone();
    block0.resize(1024, 0);
    let name = dir.join("notes.txt");
    let name = name.as_os_str().as_encoded_bytes();
    block0[108..108 + name.len()].copy_from_slice(name);
    block0[1007] = 0x55;
    std::fs::write(&swap, &block0).unwrap();
    f.content = block0;
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 30));
    assert!(text.contains("UNSAVED CHANGES"), "{text}");
    assert!(text.contains(&hint), "{text}");
    // Binary content as a hex dump, with the zero run folded.
    assert!(text.contains("000000  62 30 56 49 4d"), "{text}");
    assert!(text.contains("(zero ×"), "{text}");
    keys(&mut app, "d");
    let text = screen(&draw(&mut app, 120, 30));
    assert!(text.contains("UNSAVED CHANGES"), "{text}");
    assert!(text.contains(&hint), "{text}");
    // One it cannot check: no command, and why.
    let mut app = app_with(
        vec![vim_unsaved("/nonexistent/.notes.txt.swp")],
        opts(Theme::COLOR, false),
    );
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 30));
    assert!(text.contains("Not for you to recover: "), "{text}");
    assert!(!text.contains("vim -r"), "{text}");
}

#[test]
fn a_running_vims_unsaved_changes_are_not_a_case_for_recovery() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "old\n").unwrap();
    let swap = dir.path().join(".notes.txt.swp");
    let mut f = vim_unsaved(swap.to_str().unwrap());
    let flags = f.judgement.flags.clone();
    f.judgement = Judgement::live("process 4242 (vim) is alive, started before the swap file");
    f.judgement.flags = flags;
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 30));
    assert!(
        text.contains("Unsaved changes in a running editor"),
        "{text}"
    );
    assert!(!text.contains("vim -r"), "{text}");
}

#[test]
fn the_detail_pane_scrolls_to_the_evidence_and_the_whole_hex_dump() {
    let mut f = vim_unsaved("/home/me/work/.notes.txt.swp");
    // 512 bytes with no zero rows: a dump of 32 lines.
    f.content = (0..512u32).map(|i| (i % 251) as u8 + 1).collect();
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 60, 15));
    assert!(
        !text.contains("Evidence"),
        "too small to show it at once:\n{text}"
    );
    assert!(
        text.contains("J/K scroll"),
        "the border says how to scroll:\n{text}"
    );
    let mut seen_evidence = false;
    for _ in 0..100 {
        keys(&mut app, "J");
        let text = screen(&draw(&mut app, 60, 15));
        seen_evidence |= text.contains("Evidence");
    }
    assert!(seen_evidence, "J scrolls down to the evidence");
    let text = screen(&draw(&mut app, 60, 15));
    assert!(text.contains("0001f0"), "the end of the dump:\n{text}");
    keys(&mut app, "K");
    let up_one = screen(&draw(&mut app, 60, 15));
    assert_ne!(up_one, text, "one K scrolls back at once");
    // At 120x40 the whole dump is reachable too.
    let text = screen(&draw(&mut app, 120, 40));
    assert!(!text.contains("more bytes"), "{text}");
}

#[test]
fn a_holders_mode_and_range_are_shown_when_the_judge_has_them() {
    use super::describe_holder;
    use locksmith::verdict::{ByteRange, Holder, HolderHow, LockMode};
    let mut h = Holder {
        pid: 42,
        name: Some("git".into()),
        how: HolderHow::Flock,
        mode: None,
        range: None,
        container: None,
    };
    assert_eq!(describe_holder(&h), "pid 42 git (flock)");
    h.how = HolderHow::Posix;
    h.mode = Some(LockMode::Write);
    h.range = Some(ByteRange {
        start: 100,
        end: Some(199),
    });
    assert_eq!(
        describe_holder(&h),
        "pid 42 git (posix write bytes 100-199)"
    );
    h.range = Some(ByteRange {
        start: 0,
        end: None,
    });
    assert_eq!(
        describe_holder(&h),
        "pid 42 git (posix write)",
        "a lock of the whole file names no range"
    );
}
