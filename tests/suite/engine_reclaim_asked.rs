//! A reclaim of an engine lock goes through the engine, which judges the lock again with the
//! scanner's evidence at the moment of removal. An owner on another host is `foreign` to it
//! whatever that host said a moment ago, so the engine refuses; the judgement it refuses with
//! still carries what to ask that host, so the lock can be asked about again (as the terminal
//! UI does with a refused row). The other host is real: sshd on 127.0.0.1 in a UTS namespace
//! called `node17` (see `ask_hosts`).

use std::fs;
use std::time::Duration;

use crate::ask_hosts::node17;
use crate::util::judging::judge;
use crate::util::*;
use locksmith::config::RawConfig;
use locksmith::reclaim::{Action, Reclaim, ReclaimOptions};
use locksmith::remote::Asker;
use locksmith::scan::Finding;
use locksmith::verdict::Verdict;

/// `f` judged again with what its host answers now.
fn asked_now(asker: &Asker, f: &Finding) -> Finding {
    let claim = f
        .judgement
        .remote
        .as_deref()
        .cloned()
        .unwrap_or_else(|| panic!("nothing to ask about: {:#?}", f.judgement));
    let answers = asker.ask(&asker.take_unasked(vec![claim]));
    let mut f = f.clone();
    asker.settle_with(&mut f, &answers);
    f
}

#[test]
fn a_refused_engine_reclaim_keeps_what_to_ask_the_owners_host() {
    let Some(node) = node17() else { return };
    let env = Env::new();
    let work = env.path().join("shared");
    fs::create_dir(&work).unwrap();
    let settings = RawConfig::load_layers(None, Some(&node.config(&env, BIN, "")))
        .unwrap()
        .validate()
        .unwrap();
    let config = settings.scan;
    let asker = Asker::new(settings.remote, true, Duration::from_secs(3600)).unwrap();

    // An engine record of node17 from a boot of node17 that is over.
    let old = work.join("old.lock");
    let created = jiff::Timestamp::now().to_string();
    fs::write(
        &old,
        format!(
            r#"{{"pid":{},"hostname":"node17","boot_id":"00000000-1111-2222-3333-444444444444","start_time":5,"created_at":"{created}","token":"0123456789abcdef0123456789abcdef","tool":"locksmith/0.1.0"}}"#,
            dead_pid()
        ),
    )
    .unwrap();
    let found = judge(&old);
    assert_eq!(found.judgement.verdict(), Verdict::Foreign, "{found:#?}");
    let asked = asked_now(&asker, &found);
    assert_eq!(asked.judgement.verdict(), Verdict::Stale, "{asked:#?}");
    assert!(
        asked.judgement.evidence[0].contains("has booted again"),
        "{asked:#?}"
    );

    // Reclaimed as the command line does: node17 is asked again right before the removal,
    // then the engine judges the record itself, and to it an owner on node17 is foreign.
    let reask = asker.reask([&asked]);
    let opts = ReclaimOptions {
        state_dir: env.state_dir(),
        ..ReclaimOptions::new()
    };
    let mut outcomes = Vec::new();
    Reclaim::new(&config)
        .options(opts)
        .settle(|judged, fresh| reask.settle(judged, fresh))
        .run([&asked], |o| outcomes.push(o));
    let [o] = outcomes.as_slice() else {
        panic!("{outcomes:#?}")
    };
    assert_eq!(o.action, Action::Kept, "{o:#?}");
    assert_eq!(o.judgement.verdict(), Verdict::Foreign, "{o:#?}");
    assert!(old.exists());
    let claim = o.judgement.remote.as_ref().expect("what to ask node17");
    assert_eq!(claim.host, "node17");
    assert_eq!(
        claim.boot_id.as_deref(),
        Some("00000000-1111-2222-3333-444444444444")
    );
    assert_eq!(claim.start_ticks, Some(5));

    // Asked again with the judgement of the refusal: node17 proves it stale once more.
    let refused = Finding {
        judgement: o.judgement.clone(),
        ..asked.clone()
    };
    let again = asked_now(&asker, &refused);
    assert_eq!(again.judgement.verdict(), Verdict::Stale, "{again:#?}");
    assert!(
        again.judgement.evidence[0].contains("has booted again"),
        "{again:#?}"
    );
}
