//! The pop-ups drawn over the table, one file each: the help screen and the confirm dialog.
//! Each says how big it is for a screen size (so the app can clamp its scrolling) and draws
//! itself from narrow parameters.

pub mod dialog;
pub mod help;
