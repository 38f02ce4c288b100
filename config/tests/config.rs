// figment::Jail closures return figment::Error, which is large: its API, not ours.
#![allow(clippy::result_large_err)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use weft_config::{load, load_file, Config, LogFormat, Overrides, Source, Sources};

fn example_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("weft.example.toml")
}

/// Every leaf key of a TOML table, dotted.
fn leaf_keys(value: &toml::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                // An empty table is still a documented key (e.g. `[fetch.resolve]`).
                if matches!(v, toml::Value::Table(inner) if inner.is_empty()) {
                    out.insert(key);
                } else {
                    leaf_keys(v, &key, out);
                }
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

#[test]
fn example_documents_every_key_with_its_default() {
    let text = std::fs::read_to_string(example_path()).unwrap();
    let parsed: toml::Value = toml::from_str(&text).unwrap();
    let defaults = toml::Value::try_from(Config::default()).unwrap();
    let (mut documented, mut all) = (BTreeSet::new(), BTreeSet::new());
    leaf_keys(&parsed, "", &mut documented);
    leaf_keys(&defaults, "", &mut all);
    assert_eq!(documented, all, "weft.example.toml must list exactly the keys of Config");
    assert_eq!(load_file(&example_path()).unwrap(), Config::default());
}

#[test]
fn config_show_round_trips() {
    let shown = Config::default().to_toml();
    let back: Config = toml::from_str(&shown).unwrap();
    assert_eq!(back, Config::default());
}

#[test]
fn sources_merge_in_order_defaults_file_env_cli() {
    figment::Jail::expect_with(|jail| {
        jail.create_file(
            "weft.toml",
            r#"
            [crawl]
            concurrency = 7
            max_depth = 3
            [politeness]
            default_delay_ms = 250
            "#,
        )?;
        jail.set_env("WEFT_CRAWL__MAX_DEPTH", "5");
        jail.set_env("WEFT_FETCH__ALLOW_PRIVATE_NETWORKS", "true");
        jail.set_env("WEFT_DATA_DIR", "from-env");
        // `--config`'s variable names the file (the binary reads it through clap), not a setting.
        jail.set_env("WEFT_CONFIG", "elsewhere.toml");
        let sources = Sources {
            config_file: Some("weft.toml".into()),
            read_env: true,
            install_dirs: Vec::new(),
            overrides: Overrides {
                data_dir: Some("from-cli".into()),
                seeds: vec!["http://a.test/".into()],
                log_format: Some(LogFormat::Json),
                api_listen: None,
                bootstrap: vec!["/ip4/10.0.0.1/tcp/7701/p2p/12D3KooWxyz".into()],
                p2p: false,
                contact: Some("mailto:ops@crawler.weft-volunteers.org".into()),
            },
        };
        let c = load(&sources).unwrap();
        assert_eq!(c.fetch.contact_url, "mailto:ops@crawler.weft-volunteers.org", "--contact sets it");
        assert_eq!(c.p2p.bootstrap, ["/ip4/10.0.0.1/tcp/7701/p2p/12D3KooWxyz"], "--bootstrap sets the peers");
        assert!(c.p2p.enabled, "--bootstrap implies p2p.enabled");
        assert_eq!(c.crawl.concurrency, 7, "file beats default");
        assert_eq!(c.crawl.max_depth, 5, "env beats file");
        assert!(c.fetch.allow_private_networks, "env is parsed as bool");
        assert_eq!(c.politeness.default_delay_ms, 250);
        assert_eq!(c.data_dir, PathBuf::from("from-cli"), "cli beats env");
        assert_eq!(c.crawl.seeds, vec!["http://a.test/".to_string()]);
        assert_eq!(c.log.format, LogFormat::Json);
        assert_eq!(c.crawl.max_pages_per_host, Config::default().crawl.max_pages_per_host);
        Ok(())
    });
}

#[test]
fn relative_model_paths_resolve_in_the_installation_not_the_working_directory() {
    figment::Jail::expect_with(|jail| {
        // Two installation dirs: the model files sit in the second (a checkout's root, two
        // above target/release); the working directory has a decoy that must not be used.
        let root = jail.directory().to_path_buf();
        let install = root.join("usr-lib-weft");
        let checkout = root.join("checkout");
        let defaults = weft_config::EmbedConfig::default();
        for file in [&defaults.model, &defaults.tokenizer, &defaults.ort_library] {
            for base in [&checkout, &root] {
                std::fs::create_dir_all(base.join(file).parent().unwrap()).unwrap();
                std::fs::write(base.join(file), b"x").unwrap();
            }
        }
        std::fs::create_dir_all(&install).unwrap();
        jail.create_file("weft.toml", "[embed]\nort_library = \"/opt/ort/libonnxruntime.so\"\n")?;
        let sources = Sources {
            config_file: Some("weft.toml".into()),
            read_env: false,
            install_dirs: vec![install.clone(), checkout.clone()],
            overrides: Overrides::default(),
        };
        let c = load(&sources).unwrap();
        assert_eq!(c.embed.model, checkout.join(&defaults.model), "found in the second dir, not the cwd");
        assert_eq!(c.embed.tokenizer, checkout.join(&defaults.tokenizer));
        assert_eq!(c.embed.ort_library, PathBuf::from("/opt/ort/libonnxruntime.so"), "absolute paths stay");
        // Nowhere: the first dir is named, so the error says where it was looked for.
        let c = load(&Sources { install_dirs: vec![install.join("none")], ..sources.clone() }).unwrap();
        assert_eq!(c.embed.model, install.join("none").join(&defaults.model));
        Ok(())
    });
}

#[test]
fn weft_toml_in_data_dir_is_read_when_no_config_flag() {
    figment::Jail::expect_with(|jail| {
        std::fs::create_dir_all(jail.directory().join("dd")).unwrap();
        jail.create_file("dd/weft.toml", "[crawl]\nconcurrency = 3\n")?;
        let sources = Sources {
            config_file: None,
            read_env: false,
            install_dirs: Vec::new(),
            overrides: Overrides { data_dir: Some("dd".into()), ..Default::default() },
        };
        assert_eq!(load(&sources).unwrap().crawl.concurrency, 3);
        Ok(())
    });
}

#[test]
fn unknown_key_in_file_names_key_and_file() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("bad.toml", "[crawl]\nconcurency = 3\n")?;
        let err = load_file(Path::new("bad.toml")).unwrap_err();
        let p = &err.problems[0];
        assert_eq!(p.key, "crawl.concurency");
        assert!(matches!(&p.source, Source::File(path) if path.ends_with("bad.toml")), "{err}");
        assert!(p.message.contains("unknown key"), "{err}");
        assert!(err.to_string().contains("concurrency"), "lists the expected keys: {err}");
        Ok(())
    });
}

#[test]
fn retired_keys_still_load_are_ignored_and_named() {
    figment::Jail::expect_with(|jail| {
        jail.create_file(
            "old.toml",
            "[p2p]\nbootstrap_interval_secs = 300\n[search]\ncentroids = 32\nsummary_interval_secs = 30\nprobes = 2\n",
        )?;
        let c = load_file(Path::new("old.toml")).unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(
            c.retired_keys(),
            ["p2p.bootstrap_interval_secs", "search.centroids", "search.summary_interval_secs", "search.probes"]
        );
        let toml = c.to_toml();
        assert!(!toml.contains("centroids") && !toml.contains("bootstrap_interval"), "never written");
        assert!(Config::default().retired_keys().is_empty());
        Ok(())
    });
}

#[test]
fn out_of_range_env_value_names_variable_and_range() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("WEFT_FETCH__MAX_REDIRECTS", "99");
        let err = load(&Sources::default()).unwrap_err();
        let p = &err.problems[0];
        assert_eq!(p.key, "fetch.max_redirects");
        assert_eq!(p.source, Source::Env("WEFT_FETCH__MAX_REDIRECTS".into()));
        let text = err.to_string();
        assert!(text.contains("0 ..= 20") && text.contains("99"), "{text}");
        Ok(())
    });
}

#[test]
fn unknown_env_variable_is_rejected() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("WEFT_CRAWL__MAXDEPTH", "5");
        let err = load(&Sources::default()).unwrap_err();
        assert_eq!(err.problems[0].key, "crawl.maxdepth");
        assert_eq!(err.problems[0].source, Source::Env("WEFT_CRAWL__MAXDEPTH".into()));
        Ok(())
    });
}

#[test]
fn out_of_range_in_file_and_wrong_type_are_all_reported() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("bad.toml", "[frontier]\nseen_fp_rate = 0.9\n[crawl]\nconcurrency = 0\n")?;
        let err = load_file(Path::new("bad.toml")).unwrap_err();
        let keys: Vec<_> = err.problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, vec!["crawl.concurrency", "frontier.seen_fp_rate"], "{err}");
        assert!(err.problems.iter().all(|p| matches!(p.source, Source::File(_))));
        jail.create_file("type.toml", "[crawl]\nconcurrency = \"many\"\n")?;
        let err = load_file(Path::new("type.toml")).unwrap_err();
        assert_eq!(err.problems[0].key, "crawl.concurrency");
        assert!(err.problems[0].message.contains("wrong type"), "{err}");
        Ok(())
    });
}

#[test]
fn missing_explicit_config_file_is_an_error() {
    let err = load_file(Path::new("/nonexistent/weft.toml")).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[test]
fn user_agent_header_and_robots_token() {
    let mut f = Config::default().fetch;
    assert_eq!(f.robots_token(), "WeftBot");
    assert_eq!(f.user_agent_header(), "WeftBot/0.1", "no contact by default");
    f.contact_url = "https://crawler.weft-volunteers.org/".into();
    assert_eq!(f.user_agent_header(), "WeftBot/0.1 (+https://crawler.weft-volunteers.org/)");
}

#[test]
fn the_copies_held_for_others_count_under_the_disk_quota() {
    let mut ix = weft_config::IndexConfig::default();
    // No disk quota: the copies have their own bound, the index none.
    assert_eq!(ix.replica_bytes(), 2048 << 20);
    assert_eq!(ix.own_quota_bytes(true), 0);
    // A quota of 4 GiB: the copies a quarter of it at most, the index the rest.
    ix.disk_quota_mb = 4096;
    assert_eq!(ix.replica_bytes(), 1024 << 20);
    assert_eq!(ix.own_quota_bytes(true), 3072 << 20);
    assert_eq!(ix.own_quota_bytes(false), 4096 << 20, "a standalone node holds no copies");
    // A smaller replica bound is kept, and the index gets the rest.
    ix.replica_quota_mb = 100;
    assert_eq!(ix.replica_bytes(), 100 << 20);
    assert_eq!(ix.own_quota_bytes(true), 3996 << 20);
    ix.replicas = 0;
    assert_eq!(ix.own_quota_bytes(true), 4096 << 20, "no copies made");
}

/// A contact is empty (none), an http(s) page or a mailto: address, and never a placeholder
/// that names nobody; `--contact` sets it.
#[test]
fn a_contact_must_reach_someone() {
    let with = |contact: &str| {
        let sources = Sources {
            config_file: None,
            read_env: false,
            install_dirs: Vec::new(),
            overrides: Overrides { contact: Some(contact.to_string()), ..Default::default() },
        };
        load(&sources)
    };
    for good in
        ["", "https://crawler.weft-volunteers.org/about", "http://my.host.net:8080/bot", "mailto:ops@my.host.net"]
    {
        assert_eq!(with(good).unwrap().fetch.contact_url, good);
    }
    for bad in [
        "https://example.com/",
        "https://bot.example.org/about",
        "mailto:me@example.net",
        "https://github.com/weft-search/weft",
        "https://weft.invalid/",
        "http://localhost/",
        "mailto:nobody",
        "ftp://files.weft-volunteers.org/",
        "my crawler",
    ] {
        let err = with(bad).unwrap_err();
        assert_eq!(err.problems[0].key, "fetch.contact_url", "{bad}: {err}");
        assert!(matches!(err.problems[0].source, Source::Cli), "{bad}: {err}");
    }
    let defaults = weft_config::FetchConfig::default();
    assert!(defaults.contact_url.is_empty() && !defaults.public_web_allowed());
    assert!(defaults.nothing_reachable().unwrap().contains("fetch.contact_url"));
    let private = weft_config::FetchConfig { allow_private_networks: true, ..defaults };
    assert!(private.nothing_reachable().is_none() && !private.public_web_allowed());
}
