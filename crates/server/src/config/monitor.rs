//! `[monitor]` and `[metrics]`: the server's counters, `cn=Monitor`, and the HTTP endpoint
//! that serves them to Prometheus.
//!
//! Keys (what is counted and how it is laid out: `docs/monitoring.md`):
//! - `monitor.enabled` (`true`): count operations, connections and binds and serve
//!   `cn=Monitor`. Off, nothing is counted, `cn=Monitor` does not exist and the root DSE
//!   names no `monitorContext` (the switch exists to measure what counting costs);
//! - `metrics.listen` (none): `host:port` of the HTTP listener serving `/metrics` (the
//!   Prometheus text format), `/healthz` and `/readyz`. Absent, no listener. Bind it to
//!   loopback or a management network: it has no authentication.

use std::net::SocketAddr;

use serde::Deserialize;

use super::ConfigError;

/// `[monitor]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorSettings {
    /// `monitor.enabled`.
    pub enabled: bool,
}

impl Default for MonitorSettings {
    fn default() -> MonitorSettings {
        MonitorSettings { enabled: true }
    }
}

/// `[monitor]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMonitor {
    pub enabled: Option<bool>,
}

impl MonitorSettings {
    pub(crate) fn from_raw(raw: RawMonitor) -> MonitorSettings {
        MonitorSettings {
            enabled: raw.enabled.unwrap_or(true),
        }
    }
}

/// `[metrics]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricsSettings {
    /// `metrics.listen`: where `/metrics`, `/healthz` and `/readyz` are served.
    pub listen: Option<SocketAddr>,
}

/// `[metrics]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMetrics {
    pub listen: Option<String>,
}

impl MetricsSettings {
    pub(crate) fn from_raw(raw: RawMetrics) -> Result<MetricsSettings, ConfigError> {
        let listen = match raw.listen {
            None => None,
            Some(text) => Some(text.parse::<SocketAddr>().map_err(|_| {
                ConfigError::invalid(
                    "metrics.listen",
                    format!("`{text}` is not an address and port (e.g. \"127.0.0.1:9330\")"),
                )
            })?),
        };
        Ok(MetricsSettings { listen })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_takes_an_address_and_port() {
        let m = MetricsSettings::from_raw(RawMetrics {
            listen: Some("127.0.0.1:9330".into()),
        })
        .unwrap();
        assert_eq!(m.listen, Some("127.0.0.1:9330".parse().unwrap()));
        let e = MetricsSettings::from_raw(RawMetrics {
            listen: Some("localhost".into()),
        })
        .unwrap_err();
        assert!(e.to_string().contains("metrics.listen"), "{e}");
    }
}
