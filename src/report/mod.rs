//! The report: table and JSON.
