//! `x` and the stop dialog.

use crate::tui::testkit::*;

fn target(pid: i32) -> crate::tui::stop::Target {
    crate::tui::stop::Target {
        pid,
        start_ticks: 1234,
        name: "sleep".into(),
        user: "me".into(),
        cmdline: "sleep 1000".into(),
        how: "flock".into(),
        under: None,
        stopped: false,
    }
}

/// A lock with a waiter and a stopped holder: the detail pane lists the waiter and says the
/// holder is stuck; `x` opens its dialog (No by default) naming that process and why it is
/// stuck, and only its Yes signals it; `e` stays the recovery of a vim swap.
#[test]
fn a_stuck_holder_is_shown_with_its_waiters_and_stopped_with_x_only_on_yes() {
    use crate::tui::msg::StopResult;
    use crate::tui::stop::{Plan, Sent, Sig};
    use locksmith::probe::waiters::{WaitHow, Waiter};
    use locksmith::report::waiting::{Stuck, Waiting};
    let path = "/home/me/.cargo/.package-cache";
    let mut app = app_with(vec![live_with_process(path)], opts(Theme::COLOR, false));
    let waiting = Waiting {
        waiters: vec![Waiter {
            pid: 4400,
            name: Some("cargo".into()),
            cmd: vec!["cargo".into(), "build".into()],
            how: WaitHow::Flock,
            write: Some(true),
            started_ms: Some(NOW - 60_000),
            blocked_in: Some("flock(3, LOCK_EX) in locks_lock_inode_wait".into()),
            evidence: "a blocked flock request for a write lock on this file (/proc/locks)".into(),
            container: None,
        }],
        holder: None,
        handles: vec![".#lk0x00005603a1b2c3d0.laptop.4321".into()],
    };
    app.update(Msg::Waiting {
        judged: vec![PathBuf::from(path)],
        waiting: [(PathBuf::from(path), waiting.clone())].into(),
    });
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 40));
    assert!(
        line_with(&text, "Waiting").contains("4400 cargo (flock, write;"),
        "{text}"
    );
    assert!(text.contains("blocked in flock(3, LOCK_EX)"), "{text}");
    // A handle of a GnuPG dotlock is shown as part of its lock.
    assert!(
        line_with(&text, "Handles").contains(".#lk0x00005603a1b2c3d0.laptop.4321  a hard link"),
        "{text}"
    );
    assert!(!text.contains("Stuck"), "not stuck yet:\n{text}");
    let stuck = Stuck {
        pid: 4321,
        name: "sleep".into(),
        start_ticks: 1234,
        why: "process 4321 (sleep) is stopped (state T, by SIGSTOP or Ctrl-Z)".into(),
    };
    app.update(Msg::Waiting {
        judged: vec![PathBuf::from(path)],
        waiting: [(
            PathBuf::from(path),
            Waiting {
                holder: Some(stuck.clone()),
                ..waiting
            },
        )]
        .into(),
    });
    let text = screen(&draw(&mut app, 120, 40));
    assert!(line_with(&text, "Stuck").contains("is stopped"), "{text}");
    assert!(text.contains("x stops process 4321"), "{text}");
    // e is the recovery of a vim swap, not a way to end a holder.
    assert!(keys(&mut app, "e").is_empty());
    assert!(app.popup().is_none());

    let plan_of = |f: &Finding| Plan {
        finding: Box::new(f.clone()),
        signal: Sig::Term,
        targets: vec![target(4321)],
        refused: Vec::new(),
        after: None,
        stuck: None,
    };
    let effects = keys(&mut app, "x");
    let [Effect::PlanStop(f)] = effects.as_slice() else {
        panic!("x looks at the holders off the UI thread: {effects:?}")
    };
    let plan = plan_of(f);
    app.update(Msg::StopPlanned(Ok(plan.clone())));
    let Some(d) = app.dialog() else {
        panic!("x opens its dialog")
    };
    assert_eq!(d.highlight, Choice::No);
    let text = screen(&draw(&mut app, 120, 40));
    for needle in [
        "Send SIGTERM to this process?",
        "● pid 4321 sleep (user me)",
        "Stuck: process 4321 (sleep) is stopped (state T",
        "[ No ]",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    // Enter takes No.
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(app.popup().is_none());
    keys(&mut app, "x");
    app.update(Msg::StopPlanned(Ok(plan)));
    let effects = keys(&mut app, "y");
    let [Effect::Stop(c)] = effects.as_slice() else {
        panic!("y signals: {effects:?}")
    };
    let confirmed = c.signal().unwrap().clone();
    assert_eq!(confirmed.stuck, Some(stuck));
    assert_eq!(confirmed.targets, [target(4321)]);
    let effect = app.update(Msg::Stopped(StopResult {
        plan: confirmed,
        sent: Sent {
            exited: vec![target(4321)],
            ..Sent::default()
        },
    }));
    assert!(matches!(effect, Some(Effect::Rejudge(_))), "{effect:?}");
    assert!(
        app.status().unwrap().text.contains("exited"),
        "{:?}",
        app.status()
    );
}

#[test]
fn x_asks_before_sigterm_offers_sigkill_after_and_judges_the_lock_again() {
    use crate::tui::msg::StopResult;
    use crate::tui::stop::{Plan, Sent, Sig};
    let web = PathBuf::from("/srv/app/web.pid");
    let mut app = app();
    // A stale lock has nobody to stop.
    assert!(keys(&mut app, "x").is_empty());
    assert!(
        app.status()
            .unwrap()
            .text
            .contains("no process holds it now")
    );
    keys(&mut app, "j");
    let effects = keys(&mut app, "x");
    let [Effect::PlanStop(f)] = effects.as_slice() else {
        panic!("x looks at the holders off the UI thread: {effects:?}")
    };
    assert_eq!(f.path, web);
    assert!(keys(&mut app, "x").is_empty(), "one at a time");
    let plan = Plan {
        finding: f.clone(),
        signal: Sig::Term,
        targets: vec![target(4321)],
        refused: vec!["pid 1 is the init process: never signalled".into()],
        after: None,
        stuck: None,
    };
    app.update(Msg::StopPlanned(Ok(plan.clone())));
    let text = screen(&draw(&mut app, 100, 30));
    for needle in [
        "Send SIGTERM to this process?",
        "This process holds the lock /srv/app/web.pid:",
        "● pid 4321 sleep (user me)  (flock)",
        "sleep 1000",
        "Not signalled (1 holder):",
        "pid 1 is the init process: never signalled",
        "[ No ]",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    assert!(
        text.lines().last().unwrap().starts_with("y yes"),
        "the dialog keeps the key bar:\n{text}"
    );
    // No is the default.
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(app.popup().is_none());
    assert!(app.status().unwrap().text.contains("no signal was sent"));
    app.update(Msg::StopPlanned(Ok(plan)));
    let effects = keys(&mut app, "y");
    let [Effect::Stop(c)] = effects.as_slice() else {
        panic!("y sends: {effects:?}")
    };
    let sent = c.signal().unwrap().clone();
    assert_eq!(sent.signal, Sig::Term);
    assert_eq!(sent.targets, [target(4321)]);
    assert!(app.busy.stopping);
    // It did not exit within the grace period: SIGKILL is offered, the lock judged again.
    let effect = app.update(Msg::Stopped(StopResult {
        plan: sent,
        sent: Sent {
            exited: Vec::new(),
            survivors: vec![target(4321)],
            errors: Vec::new(),
            resumed: Vec::new(),
        },
    }));
    let Some(Effect::Rejudge(again)) = effect else {
        panic!("judged again: {effect:?}")
    };
    assert_eq!(again[0].path, web);
    let text = screen(&draw(&mut app, 100, 30));
    assert!(text.contains("Send SIGKILL to this process?"), "{text}");
    assert!(text.contains("still running 5 s after SIGTERM"), "{text}");
    let effects = keys(&mut app, "y");
    let [Effect::Stop(c)] = effects.as_slice() else {
        panic!("y sends SIGKILL: {effects:?}")
    };
    let kill = c.signal().unwrap().clone();
    assert_eq!(kill.signal, Sig::Kill);
    app.update(Msg::Stopped(StopResult {
        plan: kill,
        sent: Sent {
            exited: vec![target(4321)],
            survivors: Vec::new(),
            errors: Vec::new(),
            resumed: Vec::new(),
        },
    }));
    assert!(app.popup().is_none(), "nothing more to offer");
    assert!(!app.busy.stopping);
    let s = app.status().cloned().unwrap();
    assert!(
        s.text
            .starts_with("SIGKILL: pid 4321 sleep (user me) exited"),
        "{}",
        s.text
    );
    // Judged again, the lock turns stale on screen.
    app.update(Msg::Rejudged(vec![(
        web.clone(),
        Rejudge::Judged(Box::new(finding(
            "/srv/app/web.pid",
            "pidfile",
            Verdict::Stale,
            Some(4321),
        ))),
    )]));
    let text = screen(&draw(&mut app, 120, 12));
    assert!(
        line_with(&text, "/srv/app/web.pid").contains("✗ stale"),
        "{text}"
    );
    // --readonly never signals.
    let mut ro = app_with(sample(), opts(Theme::COLOR, true));
    keys(&mut ro, "j");
    assert!(keys(&mut ro, "x").is_empty());
    assert!(ro.status().unwrap().text.contains("read-only"));
}
