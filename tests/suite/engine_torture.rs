//! Torture: six workers run fifty critical sections each through the real `locksmith lock`
//! binary while a killer SIGKILLs whole holder process groups at random (see
//! `engine_util::torture`): no overlap, no lost counter update, nothing left behind.

use crate::util::torture::{Params, run};

#[test]
fn torture_no_overlap_no_lost_update_under_random_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        Params {
            workers: 6,
            sections: 50,
            min_kills: 20,
            max_kills: 40,
        },
    );
}
