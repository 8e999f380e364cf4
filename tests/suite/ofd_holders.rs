//! A process holding an OFD lock (which `/proc/locks` shows as pid -1) is named by its PID,
//! found through `/proc/<pid>/fdinfo`, also on a btrfs subvolume, whose files have another
//! device number than the one `/proc/locks` prints.

use std::fs;
use std::path::Path;

use crate::util::btrfs::BtrfsSubvolume;
use crate::util::*;

fn holders_of(env: &Env, lock: &Path) -> Vec<i64> {
    let (report, out) = env.scan_json(&[lock]);
    let l = report
        .lock(lock)
        .unwrap_or_else(|| panic!("{}", stdout(&out)));
    assert_eq!(l.verdict, "live");
    l.holders.iter().map(|h| h.pid).collect()
}

fn check(env: &Env, lock: &Path) {
    fs::write(lock, "999999\n").unwrap();
    let holder = hold_ofd(lock);
    let pids = holders_of(env, lock);
    assert_eq!(pids, [holder.pid() as i64], "the OFD lock's holder by PID");
}

#[test]
fn an_ofd_holder_is_named_by_its_pid() {
    if !require("python3") {
        return;
    }
    let env = Env::new();
    check(&env, &env.path().join("x.pid"));
}

#[test]
fn an_ofd_holder_on_a_btrfs_subvolume_is_named_by_its_pid() {
    if !require("python3") {
        return;
    }
    let env = Env::new();
    let vol = match BtrfsSubvolume::make(env.path()) {
        Ok(vol) => vol,
        Err(why) => return skip(why),
    };
    check(&env, &vol.sub.join("x.pid"));
}
