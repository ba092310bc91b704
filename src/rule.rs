//! The error of a scenario rule: the key it names and what is wrong. Its own
//! module, below everything that checks its parameters (collectives, network,
//! noise, workloads, traces), so that none of them depends on the scenario
//! module above them; the scenario places it in the file (`ScenarioError`).

/// A rule of the scenario broken: the key it names and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct RuleError {
    pub key: String,
    pub message: String,
}

impl RuleError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        RuleError { key: key.into(), message: message.into() }
    }

    /// The same error under an enclosing key (`noise[2]` + `.duration_s`).
    pub fn within(mut self, prefix: &str) -> Self {
        self.key = format!("{prefix}{}", self.key);
        self
    }
}

// the program builders that check a workload again report in words
impl From<RuleError> for String {
    fn from(e: RuleError) -> String {
        e.to_string()
    }
}
