//! The integration tests, one binary: each module holds the tests of one area, all driving the
//! real `locksmith` binary or the library on real files and processes; `util` holds what they
//! share. Test names carry their module (`dialects::...`, `engine_protocol::...`), so
//! `cargo test --test suite -- dialects::` runs one area.

mod util;

mod ask_bounds;
mod ask_hosts;
mod bounds;
mod cli_errors;
mod cli_scan;
mod container_image;
mod containers;
mod declared_ui;
mod dialects;
mod dialects_more;
mod dialects_next;
mod docs;
mod engine_evidence;
mod engine_failures;
mod engine_protocol;
mod engine_reclaim_asked;
mod engine_sshfs;
mod holders_now;
mod hostile_input;
mod hung_mounts;
mod lock_signals;
mod metrics;
mod not_locks;
mod ofd_holders;
mod packaging;
mod pastejacking;
mod perturb_machine;
mod real_programs;
mod reclaim;
mod reclaim_attacks;
mod reclaim_denied;
mod reclaim_killed;
mod restore_runs;
mod root_guards;
mod root_trust;
mod scan;
mod servers;
mod shared_formats;
mod shares;
mod start;
mod start_containers;
mod state_dir;
mod systemd_boot;
mod tui_pty;
mod verdicts;
mod waiters;
mod why;
