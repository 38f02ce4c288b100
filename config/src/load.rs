//! Merging the four sources into one [`Config`].

use crate::validate::{ConfigError, Problem, Source, CLI_NAME, ENV_PREFIX};
use crate::{Config, LogFormat};
use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Values given as command-line flags: the last and strongest source.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub data_dir: Option<PathBuf>,
    /// Appended to nothing: when given, they replace `crawl.seeds`.
    pub seeds: Vec<String>,
    pub api_listen: Option<SocketAddr>,
    pub log_format: Option<LogFormat>,
    /// `--bootstrap`: when given, they replace `p2p.bootstrap` and turn `p2p.enabled` on.
    pub bootstrap: Vec<String>,
    /// `--p2p`: join a network (as its first node when no bootstrap peer is given).
    pub p2p: bool,
    /// `--contact`: replaces `fetch.contact_url`.
    pub contact: Option<String>,
}

/// Where to read configuration from.
#[derive(Debug, Clone)]
pub struct Sources {
    /// An explicit file (`--config`); it must exist. When absent, `<data-dir>/weft.toml` is read
    /// if it exists.
    pub config_file: Option<PathBuf>,
    /// Read `WEFT_*` environment variables (tests switch this off to stay hermetic).
    pub read_env: bool,
    pub overrides: Overrides,
    /// Where relative `embed.*` paths (the model, its tokenizer, ONNX Runtime) are looked for,
    /// in order: the installation's directories, found from the binary's own path (the `weft`
    /// binary passes its directory and the two above it, so `target/release/weft` finds the
    /// checkout's `models/` and `/usr/lib/weft/weft` the package's, then the checkout it was
    /// built from). Never the working
    /// directory: a service's or a shell's current directory says nothing about where the
    /// model is. Empty: relative paths stay as they are.
    pub install_dirs: Vec<PathBuf>,
}

impl Default for Sources {
    fn default() -> Self {
        Sources { config_file: None, read_env: true, overrides: Overrides::default(), install_dirs: Vec::new() }
    }
}

/// Loads, merges and validates the configuration.
pub fn load(sources: &Sources) -> Result<Config, ConfigError> {
    let file = match &sources.config_file {
        Some(path) => {
            if !path.is_file() {
                return Err(ConfigError::single(
                    "config",
                    Source::File(path.clone()),
                    "the config file does not exist or is not a file".into(),
                ));
            }
            Some(path.clone())
        }
        None => {
            let candidate = data_dir_before_file(sources).join("weft.toml");
            candidate.is_file().then_some(candidate)
        }
    };
    let figment = build(file.as_deref(), sources);
    let mut config = extract(&figment)?;
    config.embed.resolve_in(&sources.install_dirs);
    Ok(config)
}

/// Validates one TOML file on its own (`weft config check FILE`): defaults < that file.
pub fn load_file(path: &Path) -> Result<Config, ConfigError> {
    load(&Sources { config_file: Some(path.to_path_buf()), read_env: false, ..Sources::default() })
}

/// The data dir as known before any file is read: the file that may live inside it cannot be
/// consulted to find it.
fn data_dir_before_file(sources: &Sources) -> PathBuf {
    if let Some(dir) = &sources.overrides.data_dir {
        return dir.clone();
    }
    if sources.read_env {
        if let Some(dir) = std::env::var_os(format!("{ENV_PREFIX}DATA_DIR")) {
            return PathBuf::from(dir);
        }
    }
    Config::default().data_dir
}

fn build(file: Option<&Path>, sources: &Sources) -> Figment {
    let mut figment = Figment::from(Serialized::defaults(Config::default()));
    if let Some(path) = file {
        figment = figment.merge(Toml::file_exact(path));
    }
    if sources.read_env {
        // WEFT_CONFIG names the file (`--config`'s variable), not a setting.
        figment = figment.merge(Env::prefixed(ENV_PREFIX).split("__").ignore(&["config"]));
    }
    let o = &sources.overrides;
    let cli = |key: &'static str, value: figment::value::Value| Serialized::default(key, value).named_cli();
    if let Some(dir) = &o.data_dir {
        figment = figment.merge(cli("data_dir", dir.display().to_string().into()));
    }
    if !o.seeds.is_empty() {
        figment = figment.merge(cli("crawl.seeds", o.seeds.clone().into()));
    }
    if !o.bootstrap.is_empty() {
        figment = figment.merge(cli("p2p.bootstrap", o.bootstrap.clone().into()));
    }
    if o.p2p || !o.bootstrap.is_empty() {
        figment = figment.merge(cli("p2p.enabled", true.into()));
    }
    if let Some(contact) = &o.contact {
        figment = figment.merge(cli("fetch.contact_url", contact.clone().into()));
    }
    if let Some(listen) = o.api_listen {
        figment = figment.merge(cli("api.listen", listen.to_string().into()));
    }
    if let Some(format) = o.log_format {
        let name = match format {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        };
        figment = figment.merge(cli("log.format", name.into()));
    }
    figment
}

/// Names a `Serialized` provider so its values are attributed to the command line.
trait NamedCli {
    fn named_cli(self) -> NamedProvider<Self>
    where
        Self: Sized;
}

impl<T: serde::Serialize> NamedCli for Serialized<T> {
    fn named_cli(self) -> NamedProvider<Self> {
        NamedProvider(self)
    }
}

struct NamedProvider<P>(P);

impl<P: figment::Provider> figment::Provider for NamedProvider<P> {
    fn metadata(&self) -> figment::Metadata {
        figment::Metadata::named(CLI_NAME)
    }

    fn data(&self) -> Result<figment::value::Map<figment::Profile, figment::value::Dict>, figment::Error> {
        self.0.data()
    }
}

fn extract(figment: &Figment) -> Result<Config, ConfigError> {
    let config: Config = figment
        .extract()
        .map_err(|e| ConfigError::from_problems(e.into_iter().map(|e| Problem::from_figment(&e)).collect()))?;
    config.validate_with(|key| Source::of(figment, key))?;
    Ok(config)
}
