//! Reclaim: removing a lock proven stale at the moment of removal.
