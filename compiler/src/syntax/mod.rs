//! The small languages inside pack strings: `{{var}}` templates and `${...}` references.
