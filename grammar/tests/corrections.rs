//! corrections
