"""Training configuration: defaults, YAML overrides and clear errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from train.config import ConfigError, TrainConfig, load_config, number_from_text, parse_overrides

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize("name", ["smoke", "quick", "default"])
def test_shipped_configs_load(name):
    config = load_config(CONFIGS / f"{name}.yaml")
    assert config.name == name
    assert config.total_games > 0


def test_unknown_keys_are_named_with_the_key_most_likely_meant(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("total_gmaes: 10\nlam: 0.5\n")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['total_gmaes'\] \(did you mean: total_gmaes -> total_games\?\)"):
        load_config(path)
    path.write_text("LR: 0.1\nwhatever: 1\n")  # a case slip is a near miss; nothing is near "whatever"
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['LR', 'whatever'\] \(did you mean: LR -> lr\?\)"):
        load_config(path)
    path.write_text("block_rule: home\nhead_exception: []\n")  # a club's rules written as settings
    with pytest.raises(ConfigError, match=r"\(block_rule, head_exception are rule variant keys: put them under "
                                          r"rules: rules: \{block_rule: ...\} in a config file, --set "
                                          r"'rules=\{block_rule: ...\}' on the command line\)"):
        load_config(path)


@pytest.mark.parametrize("text, match", [
    ("lam: 1.5\n", "lam"),
    ("total_games: ten\n", "total_games must be an integer"),
    ("hidden: [0]\n", "hidden"),
    ("eval_games: 3\n", "eval_games"),
    ("rules: {block_rule: sideways}\n", "rules: block_rule"),
    ("rules: {colour: red}\n", "rules: unknown rules key"),
    ("- a\n- b\n", "mapping"),
    ("lam: [\n", r"not valid YAML[\s\S]*  in \".*bad.yaml\", line 2"),  # the file named where YAML says
    ('hidden: "64"\n', "hidden must be a list of layer sizes"),  # not layers (6, 4)
    ("hidden: 64\n", r"hidden must be a list of layer sizes, integers 1\.\.65536, got 64 \(a list in brackets: "
                     r"--set 'hidden=\[64\]'\)"),
    ("hidden: 256,128\n", r"got '256,128' \(a list in brackets: --set 'hidden=\[256,128\]'\)"),
    ("hidden: 0\n", r"hidden must be a list of layer sizes, integers 1\.\.65536, got 0$"),  # [0] would be refused too
    ("hidden: [abc]\n", "hidden must be a list of layer sizes"),
    ("hidden: [1e9]\n", "hidden must be a list of layer sizes"),
    ("hidden: [3.5]\n", "hidden must be a list of layer sizes"),
    ("rules: 5\n", "rules must be a mapping"),
    ("eval_opponents: random\n", "eval_opponents must be a list"),  # not ['r', 'a', 'n', ...]
    ("eval_opponents: [gnubg]\n", "unknown \\['gnubg'\\]"),
    ("seed: -1\n", "seed must be a whole number from 0"),
    ("seed: 18446744073709551616\n", "seed must be a whole number from 0 to 2\\*\\*64 - 1"),  # torch.manual_seed's limit
    ("lr: .inf\n", "lr must be a positive learning rate"),
    ("eval_opponents: [race@1]\n", "bots do not search"),  # not at the first evaluation, hours in
    ("eval_opponents: [random@-1]\n", "eval_opponents must be player names whose '@N' is a whole number, 0 or "
                                      "more: 'random@-1': the search depth"),
    ("rules: {block_rule: x}\n", r"rules: block_rule must be one of \['ahead', 'home'\], got 'x'"),  # a list
    ("lr_final: 0\n", "lr_final must be a positive learning rate"),
    ("log_every_seconds: -1\n", "log_every_seconds"),
    ('name: "run\\e[2J"\n', "name must be a non-empty string without control characters"),  # printed on every start
    ('name: "run\\u2028"\n', "name must be a non-empty string without control characters"),  # a line separator
    ("batch_size: 512\nreplay_size: 100\n", "replay_size"),
    ("keep_checkpoints: -1\n", "keep_checkpoints"),
    ("epsilon_final: 1.5\n", "epsilon_final"),
])
def test_bad_values_give_clear_errors(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_config(path)


def test_an_eval_opponent_that_cannot_be_loaded_stops_the_run_before_it_starts(tmp_path):
    from train.trainer import Trainer, TrainError

    config = load_config(CONFIGS / "smoke.yaml", eval_opponents=["random@0", "runs/no-such-run"])
    with pytest.raises(TrainError, match="eval_opponents: runs/no-such-run: no player named"):
        Trainer(config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_eval_opponents_may_search_or_be_paths(tmp_path, monkeypatch):
    config = load_config(CONFIGS / "smoke.yaml", eval_opponents=["heuristic", "checkpoints/default@1"])
    assert config.eval_opponents == ("heuristic", "checkpoints/default@1")  # as written: eval.jsonl's keys
    monkeypatch.chdir(tmp_path)  # a bare path that is not found from here is named, with where it is looked for
    with pytest.raises(ConfigError, match=r"paths of players \(from the folder the command runs in\); "
                                          r"unknown \['run1'\]"):
        load_config(CONFIGS / "smoke.yaml", eval_opponents=["heuristic", "run1"])
    with pytest.raises(ConfigError, match="heurstic") as info:
        load_config(CONFIGS / "smoke.yaml", eval_opponents=["heurstic"])
    # Said once, as written: no ", got ('heurstic',)" after the names the message already gives.
    assert str(info.value).endswith("unknown ['heurstic']") and "got" not in str(info.value)
    with pytest.raises(ConfigError, match=r"must be bot names without '@N' \(bots do not search: \['random@1'\]\)$"):
        load_config(CONFIGS / "smoke.yaml", eval_opponents=["random@1"])
    with pytest.raises(ConfigError, match=r"hidden must be a list of layer sizes, integers 1..65536, got \[64, 0\]$"):
        TrainConfig(hidden=(64, 0))  # a tuple shown as the list a config writes


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="no config file"):
        load_config(tmp_path / "nope.yaml")


def test_resolved_config_round_trips_through_json(tmp_path):
    config = load_config(CONFIGS / "smoke.yaml", seed=5)
    config.save(tmp_path / "config.json")
    import json

    again = TrainConfig.from_dict(json.loads((tmp_path / "config.json").read_text()))
    assert again == config and again.seed == 5


def test_cli_set_overrides_are_validated(capsys):
    from tests.helpers import nardy

    def train(*overrides: str) -> tuple[int, str]:  # the command's refusals, in this process
        out = nardy(capsys, "train", "--config", str(CONFIGS / "smoke.yaml"), *overrides, "--out", "/nonexistent/never")
        return out.returncode, out.stderr

    status, err = train("--set", "lamda=0.5")
    assert status == 2 and "unknown key(s) ['lamda']" in err
    for bad in ("name=", "noequals", "total_games=null"):
        status, err = train("--set", bad)
        assert status == 2 and "--set" in err and "Traceback" not in err, (bad, err)


def test_numbers_with_exponents_are_numbers(tmp_path):
    """PyYAML reads 1e-4 (no dot) as a string; the config takes it as the number it means."""
    path = tmp_path / "exp.yaml"
    path.write_text("lr: 1e-3\nlr_final: 5E-5\ntotal_games: 4e5\n")
    config = load_config(path)
    assert (config.lr, config.lr_final, config.total_games) == (0.001, 5e-05, 400_000)
    assert isinstance(config.total_games, int)
    with pytest.raises(ConfigError, match="total_games must be an integer, got 2.5"):
        load_config(path, total_games="2.5e0")
    with pytest.raises(ConfigError, match="lr must be a number"):
        load_config(path, lr="1e-3x")


def test_training_docs_list_every_setting_with_its_default():
    import dataclasses
    import json

    text = (CONFIGS.parent / "docs" / "training.md").read_text()
    defaults = TrainConfig()
    for f in dataclasses.fields(TrainConfig):
        value = getattr(defaults, f.name)
        shown = json.dumps(list(value) if isinstance(value, tuple) else value)
        assert f"| `{f.name}` | `{shown}` |" in text, f"docs/training.md: no row for {f.name} = {shown}"


def test_settings_made_in_python_are_checked_like_those_from_a_file():
    import dataclasses

    import numpy as np

    for kwargs, message in (({"total_games": 1e6}, "total_games must be an integer"),
                            ({"batch_size": 512.0}, "batch_size must be an integer"),
                            ({"actors": True}, "actors must be an integer"),
                            ({"seed": None}, "seed must be an integer"),
                            ({"lr": "x"}, "lr must be a number"),
                            ({"updates_per_sample": float("inf")}, "updates_per_sample must be a positive number up to 1,000"),
                            ({"updates_per_sample": 1e300}, "updates_per_sample must be a positive number up to 1,000")):
        with pytest.raises(ConfigError, match=message):
            TrainConfig(**kwargs)
    with pytest.raises(ConfigError, match="replay_size must be an integer"):
        dataclasses.replace(TrainConfig(), replay_size=2e5)
    config = TrainConfig(seed=np.int64(3), lr=np.float32(0.5))  # numpy numbers are plain numbers
    assert type(config.seed) is int and type(config.lr) is float
    assert TrainConfig.from_dict(config.to_dict()) == config
    # ... from a mapping too (from_dict said "seed must be an integer, got np.int64(3)")
    assert TrainConfig.from_dict({"seed": np.int64(3), "lr": np.float32(0.5)}) == config
    with pytest.raises(ConfigError, match="actors must be an integer"):
        TrainConfig.from_dict({"actors": np.bool_(True)})


def test_a_config_that_is_not_text_is_named(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_bytes(b"name: x\n\xff\xfe\x00")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_config(path)
    path.write_bytes(b"# " + b"x" * 20000 + b"\nlam: 0.5\n\xff\xfe\n")  # past YAML's reading chunks
    with pytest.raises(ConfigError, match="at byte 20012"):
        load_config(path)


def test_an_empty_config_is_refused_and_an_explicit_empty_mapping_takes_the_defaults(tmp_path):
    # An empty file is a truncated copy or the wrong file far more often than a wish for a long run.
    for text in ("", "\n", "# nothing yet\n"):
        path = tmp_path / "mine.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError, match=r"mine.yaml holds no settings \(it is empty, or comments only\)"):
            load_config(path)
    path.write_text("{}\n")
    assert load_config(path) == load_config(None, name="mine")


def test_a_config_may_not_name_code_to_run_as_an_opponent(tmp_path):
    # Resuming someone's run folder (its config.json, or the config inside checkpoint.pt) must not
    # run a file it names.
    (tmp_path / "helper.py").write_text("raise SystemExit('ran')\n")
    for code in (f"{tmp_path / 'helper.py'}:P", "helper:P", f"{tmp_path / 'helper.py'}:P@1"):
        with pytest.raises(ConfigError, match="not code"):
            load_config(CONFIGS / "smoke.yaml", eval_opponents=["random", code])
    assert load_config(CONFIGS / "smoke.yaml", eval_opponents=["random", "checkpoints/default@1"])


def test_a_config_may_not_ask_for_a_network_past_the_size_nardy_builds():
    with pytest.raises(ConfigError, match="at most 16 layers and 20,000,000 parameters"):
        load_config(CONFIGS / "smoke.yaml", hidden=[65536] * 4)  # 17 GB of weights
    assert load_config(CONFIGS / "smoke.yaml", hidden=[4096, 1024]).hidden == (4096, 1024)


@pytest.mark.parametrize("overrides, message", [
    ({"eval_games": 20_000_000}, "eval_games must be an even number from 2 to 10,000,000"),  # not hours into the run
    ({"final_eval_games": 20_000_002}, "final_eval_games must be an even number up to 10,000,000"),
    ({"name": "../elsewhere"}, "name must be a run name without a path in it"),
    ({"name": ".."}, "name must be a run name without a path in it"),
    ({"eval_opponents": "heuristic"}, r"a list of player names \(at least one\), e.g. \[random, heuristic\]"),
    ({"lam": 1.5}, r"with --set lam: lam must be a number in \[0, 1\], got 1.5"),  # where a bad value came from
])
def test_settings_out_of_range_are_refused_naming_where(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(CONFIGS / "smoke.yaml", overrides_from="--set", **overrides)


def test_whole_numbers_written_with_a_decimal_point_are_integers(tmp_path):
    (tmp_path / "mine.yaml").write_text("total_games: 1000.0\ngames_per_task: 4e1\n")
    config = load_config(tmp_path / "mine.yaml")
    assert config.total_games == 1000 and type(config.total_games) is int and config.games_per_task == 40
    (tmp_path / "bad.yaml").write_text("total_games: 1000.5\n")
    with pytest.raises(ConfigError, match="total_games must be an integer, got 1000.5"):
        load_config(tmp_path / "bad.yaml")


@pytest.mark.parametrize("text, words", [
    ("total_games: 010\n", "'010' is a number in base 8 to YAML 1.1 (8): write it without the leading 0"),
    ("eval_every_games: 05000\n", "'05000' is a number in base 8"),
    ("log_every_seconds: 1:30\n", "'1:30' is a number in base 60 to YAML 1.1 (90): write it without the colon"),
    ("log_every_seconds: 1:30.5\n", "'1:30.5' is a number in base 60"),
])
def test_yaml_11_octal_and_base_60_numbers_are_refused_not_read_as_other_numbers(tmp_path, text, words):
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError, match=re.escape(words)):
        load_config(tmp_path / "c.yaml")


def test_a_date_yaml_cannot_read_is_a_config_error_not_a_traceback(tmp_path):
    (tmp_path / "c.yaml").write_text("name: 2024-13-45\n")
    with pytest.raises(ConfigError, match="holds a value YAML cannot read: month must be in 1..12 .*quote it"):
        load_config(tmp_path / "c.yaml")


def test_plain_forms_of_numbers_still_read_as_written(tmp_path):
    (tmp_path / "c.yaml").write_text("total_games: 0x10\nseed: 0\nactors: -0\nlog_every_seconds: 0.5\n"
                                     "games_per_task: 1_000\nname: '010'\n")
    config = load_config(tmp_path / "c.yaml")
    assert (config.total_games, config.seed, config.actors, config.log_every_seconds,
            config.games_per_task, config.name) == (16, 0, 0, 0.5, 1000, "010")


def test_settings_that_cannot_work_are_refused_by_what_is_wrong(tmp_path):
    with pytest.raises(ConfigError, match=r"eval_opponents must be players named once each \(\['random'\] given more than once"):
        load_config(CONFIGS / "smoke.yaml", eval_opponents=["random", "race", "random"])
    # config.json writes infinity as Infinity, which no config file then reads back.
    with pytest.raises(ConfigError, match="log_every_seconds must be 0 or more, a finite number of seconds, got inf"):
        load_config(CONFIGS / "smoke.yaml", log_every_seconds=float("inf"))
    with pytest.raises(ConfigError, match=r"name must be a string, got 2024 \(it is text: quote it in a YAML file\)"):
        load_config(CONFIGS / "smoke.yaml", name=2024)


def test_whole_numbers_with_exponents_are_read_exactly_however_large():
    assert number_from_text("1e16") == 10**16 and type(number_from_text("1e16")) is int  # once refused
    assert number_from_text("12345678901234567e0") == 12345678901234567  # no float rounding on the way
    assert number_from_text("2.5e0") == 2.5 and number_from_text("1e-3") == 0.001
    assert number_from_text("1e400") == float("inf")  # refused by the setting's range, not here
    assert load_config(CONFIGS / "smoke.yaml", total_games="1e16").total_games == 10**16


def test_set_values_are_read_as_yaml_except_for_text_settings():
    assert parse_overrides(["hidden=[64, 32]", "lr=1e-3", "rules={block_rule: home}", " actors = 1 "]) == {
        "hidden": [64, 32], "lr": "1e-3", "rules": {"block_rule": "home"}, "actors": 1}
    # A run's name is text as written, even when YAML would read a number or a yes; quoted works too.
    for given, name in (("name=2024", "2024"), ("name=0.1", "0.1"), ("name=yes", "yes"), ("name='2024'", "2024"),
                        ("name=a b ", "a b"), ("name=12:30", "12:30"), ("name=010", "010"), ("name=!foo", "!foo"),
                        ("name=run #1", "run #1"), ('name="x"', "x"), ("name=2024-13-45", "2024-13-45")):
        assert parse_overrides([given]) == {"name": name}
    with pytest.raises(ConfigError, match=r"--set total_games: '2024-02-30' is no value YAML can read"):
        parse_overrides(["total_games=2024-02-30"])  # once: a traceback
    for pairs, words in ((["lr=1e-3", "actors=1", "lr=2e-3"], "--set lr is given twice ('1e-3', then '2e-3')"),
                         (["lr=null"], "--set 'lr=null': lr needs a value"),
                         (["name="], "--set 'name=': name needs a value"),
                         (["noequals"], "--set takes KEY=VALUE, got 'noequals'"),
                         (["=5"], "--set takes KEY=VALUE"),
                         (["total_games=010"], "--set total_games: '010' is a number in base 8")):
        with pytest.raises(ConfigError, match=re.escape(words)):
            parse_overrides(pairs)


def test_a_key_given_twice_in_a_yaml_file_is_refused(tmp_path):
    """PyYAML keeps the last copy silently: an edit to the first would do nothing."""
    (tmp_path / "twice.yaml").write_text("total_games: 1000\nlr: 0.001\ntotal_games: 2000\n")
    with pytest.raises(ConfigError, match=r"the key 'total_games' is given twice \(line 3\)"):
        load_config(tmp_path / "twice.yaml")
    (tmp_path / "nested.yaml").write_text("rules:\n  block_rule: home\n  block_rule: ahead\n")
    with pytest.raises(ConfigError, match="'block_rule' is given twice"):
        load_config(tmp_path / "nested.yaml")
    # A merge key's settings may be overridden, as YAML means them to be.
    import yaml

    from train.config import _UniqueKeyLoader

    merged = yaml.load("base: &b\n  block_rule: home\n  opening: reroll\nrules:\n  <<: *b\n  opening: play\n",
                       Loader=_UniqueKeyLoader)
    assert merged["rules"] == {"block_rule": "home", "opening": "play"}


def test_a_saved_run_named_with_a_path_still_reads_back():
    """The name check guards new runs (runs/NAME); a run already saved resumes whatever its name."""
    assert TrainConfig.from_dict({**TrainConfig().to_dict(), "name": "team/a"}).name == "team/a"
    with pytest.raises(ConfigError, match="name must be a run name without a path in it"):
        load_config(None, name="team/a")


def test_run_names_may_be_written_in_any_script():
    for name in ("mine 2", "нарды", "a\u00a0b", "\u0646\u0627\u0645\u200c\u06a9\u0627\u0631\u0628\u0631", "\U0001f469\u200d\U0001f4bb"):
        assert load_config(None, name=name).name == name
