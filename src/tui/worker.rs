//! Work done off the UI thread: the scan (also the periodic one in the background), the
//! periodic re-judging of listed locks (with who waits for each), the check of what this user
//! may remove, confirmed reclaims and their undo, and stopping a lock's holders. Each runs on
//! its own thread and reports to the UI thread only through the channel, as [`Incoming`]
//! messages; the UI thread never waits for any of them.
//!
//! A lock whose directory is gone (its root removed, say) is gone: re-judging says so, and so
//! does a reclaim of it. The owner and mode of each lock file are looked up after a scan and
//! each re-judge round (not on a network file system, which may not answer).
//!
//! One [`Snapshot`] per scan, one per re-judge round and one per confirmed reclaim (taken on
//! the worker thread); reclaim judges each lock again at the moment of removal
//! (`reclaim::Reclaim`). Re-judging and reclaim reach each lock through the directories it
//! was found in (`scan::rejudge`), never through its path string.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;

use locksmith::probe::Snapshot;
use locksmith::reclaim::{self, Reclaim, ReclaimOptions, Selector};
use locksmith::remote::Asker;
use locksmith::scan::{self, Config, Finding, Root, ScanEvent};

use super::components::table::REJUDGE_SLICE;
use super::confirm::ConfirmedAction;
use super::msg::{Msg, ReclaimResult, Rejudge, RestoreResult, ScanSummary, StopResult};
use super::rows::FileMeta;
use super::{stop, text};

/// What reaches the UI thread.
#[derive(Debug)]
pub enum Incoming {
    Msg(Msg),
    /// A worker or the input thread died: the UI cannot go on.
    Fatal(String),
}

/// Spawns `body` on a named thread; a panic (or a thread that cannot start) becomes
/// [`Incoming::Fatal`].
fn spawn(name: &str, tx: Sender<Incoming>, body: impl FnOnce(&Sender<Incoming>) + Send + 'static) {
    let what = name.to_string();
    let report = tx.clone();
    let started = std::thread::Builder::new()
        .name(format!("locksmith-{name}"))
        .spawn(move || {
            if let Err(p) = std::panic::catch_unwind(AssertUnwindSafe(|| body(&tx))) {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                let _ = tx.send(Incoming::Fatal(format!("the {what} thread failed: {why}")));
            }
        });
    if let Err(e) = started {
        let _ = report.send(Incoming::Fatal(format!(
            "cannot start the {name} thread: {e}"
        )));
    }
}

/// The background side of the UI.
pub struct Workers {
    tx: Sender<Incoming>,
    config: Arc<Config>,
    roots: Arc<Vec<Root>>,
    reclaim: ReclaimOptions,
    /// Cancels the running scan.
    scan_cancel: Option<Arc<AtomicBool>>,
    /// A re-judge round is running (rounds never overlap).
    rejudging: Arc<AtomicBool>,
    /// Asks the hosts of foreign locks (`--ask-hosts`), when asking is on.
    asker: Option<Arc<Asker>>,
}

impl Workers {
    pub fn new(
        tx: Sender<Incoming>,
        config: Config,
        roots: Vec<Root>,
        reclaim: ReclaimOptions,
        asker: Option<Asker>,
    ) -> Self {
        Workers {
            tx,
            config: Arc::new(config),
            roots: Arc::new(roots),
            reclaim,
            scan_cancel: None,
            rejudging: Arc::new(AtomicBool::new(false)),
            asker: asker.map(Arc::new),
        }
    }

    /// Starts a scan (cancelling the running one); its events carry `generation`.
    pub fn scan(&mut self, generation: u64) {
        if let Some(old) = self.scan_cancel.take() {
            old.store(true, Ordering::Relaxed);
        }
        let cancel = Arc::new(AtomicBool::new(false));
        self.scan_cancel = Some(cancel.clone());
        let (config, roots) = (self.config.clone(), self.roots.clone());
        let asker = self.asker.clone();
        spawn("scan", self.tx.clone(), move |tx| {
            let snap = Snapshot::take();
            let to_ask = std::sync::Mutex::new(Vec::new());
            let found = std::sync::Mutex::new(Vec::new());
            // The owner and mode of the first locks found come with the scan; those of the
            // others with their first re-judge round (which takes the rows on screen first).
            let sink = |event: ScanEvent| {
                if let ScanEvent::Found(f) = &event
                    && !f.fs.network
                {
                    let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                    if found.len() < REJUDGE_SLICE {
                        found.push(f.path.clone());
                    }
                }
                let event = match (event, &asker) {
                    (ScanEvent::Found(mut f), Some(asker)) => {
                        if asker.settle_cached(&mut f).is_some() {
                            to_ask
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((*f).clone());
                        }
                        ScanEvent::Found(f)
                    }
                    (event, _) => event,
                };
                let _ = tx.send(Incoming::Msg(Msg::Scan { generation, event }));
            };
            let result = scan::scan(&config, &roots, &snap, &cancel, &sink);
            if let Some(asker) = &asker {
                let found = to_ask.into_inner().unwrap_or_else(|e| e.into_inner());
                ask_in_background(tx, asker, found);
            }
            let summary = match result {
                Ok(s) => ScanSummary {
                    entries: s.entries,
                    locks: s.locks,
                    elapsed_ms: s.elapsed_ms,
                    cancelled: cancel.load(Ordering::Relaxed),
                    failed: None,
                },
                Err(e) => ScanSummary {
                    failed: Some(e.to_string()),
                    ..ScanSummary::default()
                },
            };
            let _ = tx.send(Incoming::Msg(Msg::ScanDone {
                generation,
                summary,
            }));
            let found = found.into_inner().unwrap_or_else(|e| e.into_inner());
            let _ = tx.send(Incoming::Msg(Msg::Files(files_of(found.iter(), &snap))));
        });
    }

    /// Judges the locks `round` gives again with a fresh snapshot, unless a round is still
    /// running (then `round` is not called); each is reached through the directories it was
    /// found in.
    pub fn rejudge(&self, round: impl FnOnce() -> Vec<Finding>) {
        if self.rejudging.swap(true, Ordering::AcqRel) {
            return;
        }
        let findings = round();
        if findings.is_empty() {
            self.rejudging.store(false, Ordering::Release);
            return;
        }
        self.rejudge_round(findings, Some(self.rejudging.clone()));
    }

    /// Judges these locks again now, whether a periodic round runs or not (after their
    /// holders were signalled, or a program ran on them).
    pub fn rejudge_now(&self, findings: Vec<Finding>) {
        if !findings.is_empty() {
            self.rejudge_round(findings, None);
        }
    }

    fn rejudge_round(&self, findings: Vec<Finding>, busy: Option<Arc<AtomicBool>>) {
        let config = self.config.clone();
        let asker = self.asker.clone();
        spawn("rejudge", self.tx.clone(), move |tx| {
            let snap = Snapshot::take();
            let mut to_ask = Vec::new();
            let results: Vec<(std::path::PathBuf, Rejudge)> = findings
                .into_iter()
                .map(|f| {
                    let r = match scan::rejudge(&f, &snap, &config) {
                        Ok(Some(mut f)) => {
                            if let Some(asker) = &asker
                                && asker.settle_cached(&mut f).is_some()
                            {
                                to_ask.push(f.clone());
                            }
                            Rejudge::Judged(Box::new(f))
                        }
                        Ok(None) => Rejudge::Gone,
                        // Its directory is gone (its root was removed, say): so is the lock.
                        Err(e) if e.kind() == Some(std::io::ErrorKind::NotFound) => Rejudge::Gone,
                        Err(e) => Rejudge::Failed(e.to_string()),
                    };
                    (f.path, r)
                })
                .collect();
            if let Some(busy) = busy {
                busy.store(false, Ordering::Release);
            }
            let local: Vec<std::path::PathBuf> = results
                .iter()
                .filter_map(|(p, r)| match r {
                    Rejudge::Judged(f) if !f.fs.network => Some(p.clone()),
                    _ => None,
                })
                .collect();
            let judged: Vec<Finding> = results
                .iter()
                .filter_map(|(_, r)| match r {
                    Rejudge::Judged(f) => Some((**f).clone()),
                    _ => None,
                })
                .collect();
            // The verdicts first: they never wait for who waits, nor for the files' owners
            // and modes.
            let _ = tx.send(Incoming::Msg(Msg::Rejudged(results)));
            let waiting = locksmith::report::waiting::of_all(&judged, &snap);
            let judged = judged.into_iter().map(|f| f.path).collect();
            let _ = tx.send(Incoming::Msg(Msg::Waiting { judged, waiting }));
            if let Some(asker) = &asker {
                ask_in_background(tx, asker, to_ask);
            }
            let _ = tx.send(Incoming::Msg(Msg::Files(files_of(local.iter(), &snap))));
        });
    }

    /// Carries out a confirmed reclaim: each lock is judged again and removed only if it is
    /// still stale (or not proven stale but not live, when forced) and still the same file.
    pub fn reclaim(&self, action: ConfirmedAction) {
        let opts = self.reclaim.clone();
        let config = self.config.clone();
        let asker = self.asker.clone();
        spawn("reclaim", self.tx.clone(), move |tx| {
            // A lock proven stale by its host's answer: its host is asked again right before
            // removal, once for the whole batch.
            let reask = asker.as_ref().map(|a| a.reask(action.findings()));
            let mut outcomes = Vec::new();
            Reclaim::new(&*config)
                .options(opts)
                .force(action.forced())
                .include_unsaved(action.include_unsaved())
                .dry_run(false)
                .settle(|judged, fresh| {
                    if let Some(reask) = &reask {
                        reask.settle(judged, fresh);
                    }
                })
                .run(action.findings(), |o| outcomes.push(o));
            let results = outcomes
                .into_iter()
                .zip(action.findings())
                .map(|(o, listed)| {
                    // Not removed because it is not there any more: say so, and the row goes.
                    let gone = !o.ok && is_gone(listed, &config);
                    let message = match (&o.saved_to, &o.error) {
                        _ if gone => format!(
                            "{} is gone (it or its directory was removed since it was listed): nothing to reclaim",
                            text::path(&o.path)
                        ),
                        (_, Some(e)) => e.clone(),
                        (Some(_), None) => {
                            format!("removed {} (a copy is kept)", text::path(&o.path))
                        }
                        (None, None) => format!("removed {}", text::path(&o.path)),
                    };
                    ReclaimResult {
                        removed: o.ok && o.action == reclaim::Action::Removed,
                        gone,
                        path: o.path,
                        message,
                        judgement: (!o.ok).then_some(o.judgement),
                    }
                })
                .collect();
            let _ = tx.send(Incoming::Msg(Msg::Reclaimed(results)));
        });
    }

    /// Asks which of `findings` (the locks of the dialog just opened) this user cannot remove,
    /// with the check every reclaim makes before it tries (`reclaim::removal_denied`).
    pub fn check(&self, findings: Vec<Finding>) {
        let opts = self.reclaim.clone();
        spawn("check", self.tx.clone(), move |tx| {
            let denied = reclaim::removal_denied(&findings, &opts);
            let answers = findings.into_iter().map(|f| f.path).zip(denied).collect();
            let _ = tx.send(Incoming::Msg(Msg::Checked(answers)));
        });
    }

    /// Finds what `u` would put back: the last batch the UI reclaimed (a `D` as one step),
    /// in this session or an earlier one, of locks below the roots on screen; never a batch
    /// of another kind of run.
    pub fn plan_undo(&self) {
        let state_dir = self.reclaim.state_dir.clone();
        let selector = Selector::LastOfUi {
            roots: self.roots.iter().map(|r| r.path.clone()).collect(),
        };
        spawn("undo", self.tx.clone(), move |tx| {
            let plan = reclaim::plan(&state_dir, &selector);
            let _ = tx.send(Incoming::Msg(Msg::UndoPlanned(plan)));
        });
    }

    /// Reads the journal for the journal view.
    pub fn read_journal(&self) {
        let state_dir = self.reclaim.state_dir.clone();
        spawn("journal", self.tx.clone(), move |tx| {
            let read = reclaim::restore::entries(&state_dir).map_err(|e| e.to_string());
            let _ = tx.send(Incoming::Msg(Msg::JournalRead(read)));
        });
    }

    /// Carries out a confirmed undo: puts back each lock of its batch (each only where nothing
    /// stands now) and judges the locks put back, so that their rows return at once.
    pub fn restore(&self, action: ConfirmedAction) {
        let Some(plan) = action.restore_plan().cloned() else {
            return;
        };
        let state_dir = self.reclaim.state_dir.clone();
        let config = self.config.clone();
        spawn("restore", self.tx.clone(), move |tx| {
            let results = reclaim::restore_plan(&state_dir, &plan);
            let total = results.len();
            let snap = Snapshot::take();
            let mut findings = Vec::new();
            let mut put_back = Vec::new();
            let mut refused = Vec::new();
            for r in results {
                match r {
                    Ok(r) => {
                        let mut line = match &r.inside {
                            Some((container, inside)) => {
                                format!("{} in {}", text::path(inside), text::clean(container))
                            }
                            None => text::path(&r.path),
                        };
                        for w in &r.warnings {
                            line.push_str(&format!(" ({})", text::clean(w)));
                        }
                        put_back.push(line);
                        if let Ok(Some(f)) = scan::judge_path(&r.path, &snap, &config) {
                            findings.push(f);
                        }
                    }
                    Err(why) => refused.push(text::clean(&why)),
                }
            }
            let message = match (put_back.len(), total) {
                (1, 1) => format!("restored {}", put_back[0]),
                (n, t) if n == t => format!("restored {n} locks: {}", put_back.join(", ")),
                (0, 1) => format!("not restored: {}", refused.join("; ")),
                (n, t) => format!(
                    "restored {n} of {t} locks; not restored: {}",
                    refused.join("; ")
                ),
            };
            let result = RestoreResult {
                findings,
                restored: refused.is_empty(),
                message,
            };
            let _ = tx.send(Incoming::Msg(Msg::Restored(result)));
        });
    }
}

impl Workers {
    /// Finds out whom `x` would signal for a lock (see [`stop::plan`]).
    pub fn plan_stop(&self, finding: Finding) {
        spawn("stop", self.tx.clone(), move |tx| {
            let _ = tx.send(Incoming::Msg(Msg::StopPlanned(stop::plan(&finding))));
        });
    }

    /// Signals the confirmed processes and waits for them (see [`stop::send`]).
    pub fn stop(&self, action: ConfirmedAction) {
        let Some(plan) = action.signal().cloned() else {
            return;
        };
        spawn("stop", self.tx.clone(), move |tx| {
            let sent = stop::send(&plan);
            let _ = tx.send(Incoming::Msg(Msg::Stopped(StopResult { plan, sent })));
        });
    }
}

/// Whether a listed lock is not there any more (nor, maybe, its directory).
fn is_gone(f: &Finding, config: &Config) -> bool {
    match scan::rejudge(f, &Snapshot::take(), config) {
        Ok(None) => true,
        Err(e) => e.kind() == Some(std::io::ErrorKind::NotFound),
        Ok(Some(_)) => false,
    }
}

/// The owner and mode of each lock file (the file itself, not a symlink's target), with the
/// owner's name.
fn files_of<'a>(
    paths: impl Iterator<Item = &'a std::path::PathBuf>,
    snap: &Snapshot,
) -> Vec<(std::path::PathBuf, FileMeta)> {
    use std::os::unix::fs::MetadataExt;
    paths
        .filter_map(|p| {
            let m = std::fs::symlink_metadata(p).ok()?;
            Some((
                p.clone(),
                FileMeta {
                    uid: m.uid(),
                    gid: m.gid(),
                    mode: m.mode(),
                    user: snap.user_name(m.uid()),
                },
            ))
        })
        .collect()
}

/// Asks the hosts of `found` (foreign locks whose host has no recent answer) on a thread of its
/// own, unless they are being asked already; the UI hears `Asking`, then the locks judged again
/// with the answers, then `Asked`.
fn ask_in_background(tx: &Sender<Incoming>, asker: &Arc<Asker>, found: Vec<Finding>) {
    let questions = asker.take_unasked(
        found
            .iter()
            .filter_map(|f| f.judgement.remote.as_deref().cloned())
            .collect(),
    );
    if questions.is_empty() {
        return;
    }
    let asker = asker.clone();
    spawn("ask", tx.clone(), move |tx| {
        let mut hosts: Vec<String> = questions.keys().cloned().collect();
        hosts.sort();
        let _ = tx.send(Incoming::Msg(Msg::Asking(hosts.clone())));
        let answers = asker.ask(&questions);
        let results = found
            .into_iter()
            .filter(|f| {
                f.judgement
                    .remote
                    .as_ref()
                    .is_some_and(|c| questions.contains_key(&c.host))
            })
            .map(|mut f| {
                asker.settle_with(&mut f, &answers);
                (f.path.clone(), Rejudge::Judged(Box::new(f)))
            })
            .collect();
        let _ = tx.send(Incoming::Msg(Msg::Rejudged(results)));
        let failed = answers.values().filter(|a| a.is_err()).count();
        let _ = tx.send(Incoming::Msg(Msg::Asked { hosts, failed }));
    });
}

impl Drop for Workers {
    fn drop(&mut self) {
        if let Some(c) = &self.scan_cancel {
            c.store(true, Ordering::Relaxed);
        }
    }
}
