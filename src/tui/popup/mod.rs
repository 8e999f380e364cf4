//! The pop-ups drawn over the table, one file each: the help screen and the confirm dialog.
//! Each says how big it is for a screen size (so the app can clamp its scrolling) and draws
//! itself from narrow parameters.

pub mod dialog;
pub mod help;

/// ` 3-12/40 ↓ more · j/↓ scroll ` for a view of `shown` lines from `scroll` in `total`, or
/// `None` when everything is in view.
pub fn scroll_hint(scroll: u16, shown: u16, total: usize, keys: &str) -> Option<String> {
    let total16 = u16::try_from(total).unwrap_or(u16::MAX);
    if total16 <= shown || shown == 0 {
        return None;
    }
    let last = scroll.saturating_add(shown).min(total16);
    let more = if last < total16 { " ↓ more" } else { "" };
    Some(format!(
        " {}-{last}/{total}{more} · {keys} scroll ",
        scroll + 1
    ))
}
