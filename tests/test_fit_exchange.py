"""The CPU cost per byte O from simultaneous exchanges: `fit postal` finds it
from `exchange.parquet`, and the engine charges an exchange on the platform
it writes exactly as the fit's model says."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import invoke_cli
from idlewave.models.fit import exchange_time
from idlewave.simulation import simulate

pytestmark = pytest.mark.integration

SIZES = [1 << k for k in range(23)]  # 1 B … 4 MiB
# (α, β, O) per protocol: short ≤ 256 B, eager ≤ 4 KiB, rendezvous above
TRUE = {"short": (0.2e-6, 0.05e-9, 0.0), "eager": (0.35e-6, 0.1e-9, 0.05e-9), "rendezvous": (1.0e-6, 0.12e-9, 0.09e-9)}


def _protocol(n: int) -> str:
    return "short" if n <= 256 else "eager" if n <= 4096 else "rendezvous"


def _data(tmp: Path, noise: float = 0.02, exchange: bool = True, seed: int = 3) -> Path:
    rng = np.random.default_rng(seed)
    pp: dict[str, list] = {"link": [], "size_bytes": [], "rep": [], "time_s": []}
    ex: dict[str, list] = {"link": [], "size_bytes": [], "rep": [], "time_s": []}
    for n in SIZES:
        a, b, o = TRUE[_protocol(n)]
        for rep in range(10):
            for rows, t in ((pp, a + b * (n - 1)), (ex, float(exchange_time(n, a, b, o)))):
                rows["link"].append("on_node")
                rows["size_bytes"].append(n)
                rows["rep"].append(rep)
                rows["time_s"].append(t * (1 + noise * rng.standard_normal()))
    pl.DataFrame(pp).write_parquet(tmp / "pingpong.parquet")
    if exchange:
        pl.DataFrame(ex).write_parquet(tmp / "exchange.parquet")
    (tmp / "machine.json").write_text(json.dumps({"ranks": 2, "ranks_per_host": {"vm": 2}, "mpi_library": "Open MPI v4.1.4"}))
    return tmp / "pingpong.parquet"


def _fit(data: Path, out: Path, *extra: str) -> dict:
    p = invoke_cli("fit", "postal", data, "-o", out, "--json", *extra, check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_o_is_found_from_exchanges_and_the_engine_charges_what_the_fit_assumed(tmp_path):
    data = _data(tmp_path)
    s = _fit(data, tmp_path / "p.toml")
    found = s["on_node"]["cpu_per_byte"]
    assert found["rendezvous"]["O_s_per_byte"] == pytest.approx(TRUE["rendezvous"][2], rel=0.1)
    # up to 4 KiB the copy ((n−1)·O ≤ 0.2 µs) hides behind the latency (0.35 µs): no O shows, none is invented
    assert found["eager"]["O_s_per_byte"] <= TRUE["eager"][0] / 4095 and found["eager"]["rms_relative_error"] < 0.03
    assert found["short"]["O_s_per_byte"] < 0.2 * TRUE["short"][1]  # none in the data
    assert all(not r["capped"] for r in found.values())
    text = (tmp_path / "p.toml").read_text()
    assert "O_s_per_byte from simultaneous exchanges" in text
    # the engine, on the written platform: one message each way at once costs the fit's exchange time,
    # and a ping-pong's one-way time is still α + (n−1)·β
    for n in (1 << 14, 1 << 20):
        proto = s["on_node"][_protocol(n)]
        a, b, o = proto["alpha_s"], proto["beta_s_per_byte"], found[_protocol(n)]["O_s_per_byte"]
        goal = tmp_path / f"x{n}.goal"
        goal.write_text(f"num_ranks 2\n\nrank 0 {{\ns: send {n}b to 1 tag 0\nr: recv {n}b from 1 tag 0\n}}\n\n"
                        f"rank 1 {{\ns: send {n}b to 0 tag 0\nr: recv {n}b from 0 tag 0\n}}\n")
        r = simulate({"workload": {"kind": "goal", "path": str(goal)}, "network": {"platform": str(tmp_path / "p.toml")}})
        assert r.summary["makespan_s"] == pytest.approx(float(exchange_time(n, a, b, o)), rel=1e-6, abs=2e-12)
        goal.write_text(f"num_ranks 2\n\nrank 0 {{\ns: send {n}b to 1 tag 0\n}}\n\nrank 1 {{\nr: recv {n}b from 0 tag 0\n}}\n")
        r = simulate({"workload": {"kind": "goal", "path": str(goal)}, "network": {"platform": str(tmp_path / "p.toml")}})
        assert r.summary["makespan_s"] == pytest.approx(a + b * (n - 1), rel=1e-6, abs=2e-12)


def test_without_exchanges_o_is_zero_and_the_file_says_why(tmp_path):
    data = _data(tmp_path, exchange=False)
    s = _fit(data, tmp_path / "p.toml")
    assert "cpu_per_byte" not in s["on_node"]
    text = (tmp_path / "p.toml").read_text()
    assert "no simultaneous exchanges were measured" in text
    assert text.count("O_s_per_byte = 0.000000e+00") == 3
    p = invoke_cli("fit", "postal", data, "-o", tmp_path / "q.toml", "--exchange", tmp_path / "nope.parquet", check=False)
    assert p.returncode == 2 and "no such file" in p.stderr and "Traceback" not in p.stderr


def test_exchanges_dearer_than_the_model_can_give_are_said_to_be_capped(tmp_path):
    data = _data(tmp_path)
    ex = pl.read_parquet(tmp_path / "exchange.parquet")
    ex.with_columns(pl.col("time_s") * 3).write_parquet(tmp_path / "exchange.parquet")  # 3× a one-way time: O > β needed
    s = _fit(data, tmp_path / "p.toml")
    assert s["on_node"]["cpu_per_byte"]["rendezvous"]["capped"]
    assert s["on_node"]["cpu_per_byte"]["rendezvous"]["O_s_per_byte"] == pytest.approx(TRUE["rendezvous"][1], rel=0.05)


def test_a_table_of_another_kind_given_for_the_exchanges_is_refused_naming_it(tmp_path):
    """Ping-pong and exchange tables have the same columns; `measure pingpong` writes them as pingpong.parquet
    and exchange.parquet. A ping-pong table (the data itself, a copy, another run's), a multi-pair table, or an
    exchange table given as the ping-pong data is refused, naming the file, what it is and what was expected."""
    data = _data(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _data(other, seed=9)  # another run: its own pingpong.parquet
    (tmp_path / "copy.parquet").write_bytes(data.read_bytes())
    (tmp_path / "mp.csv").write_text("pairs,size_bytes,rep,time_s\n" + "".join(f"1,{n},0,{1e-6 + n * 1e-10}\n" for n in SIZES))
    for given, what in ((data, "the same table as the ping-pong data"), (tmp_path / "copy.parquet", "the same table as the ping-pong data"),
                        (other / "pingpong.parquet", "a ping-pong table"), (tmp_path / "mp.csv", "a multi-pair table")):
        p = invoke_cli("fit", "postal", data, "-o", tmp_path / "p.toml", "--exchange", given, check=False)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert f"error: --exchange {given}: {what}" in p.stderr and "not a simultaneous-exchange table" in p.stderr, p.stderr
        assert not (tmp_path / "p.toml").exists()
    # the exchanges given as the ping-pong data
    p = invoke_cli("fit", "postal", tmp_path / "exchange.parquet", "-o", tmp_path / "p.toml", check=False)
    assert p.returncode == 2 and "a simultaneous-exchange table" in p.stderr and "not a ping-pong table" in p.stderr, p.stderr
    # the right table is taken
    assert "cpu_per_byte" in _fit(data, tmp_path / "p.toml", "--exchange", str(tmp_path / "exchange.parquet"))["on_node"]


def test_exchanges_of_a_link_class_the_ping_pong_did_not_measure_are_said_to_be_left_out(tmp_path):
    """Off-node exchanges beside on-node ping-pongs have no fit to take O
    against: left out with a warning and a line in the platform file (they
    were dropped silently); a link class that does not exist is refused."""
    data = _data(tmp_path)
    ex = pl.read_parquet(tmp_path / "exchange.parquet")
    pl.concat([ex, ex.with_columns(pl.lit("off_node").alias("link"))]).write_parquet(tmp_path / "exchange.parquet")
    p = invoke_cli("fit", "postal", data, "-o", tmp_path / "p.toml", check=False)
    assert p.returncode == 0, p.stderr
    assert "off_node exchanges left out" in p.stderr
    assert "off_node exchanges left out" in (tmp_path / "p.toml").read_text()
    ex.with_columns(pl.lit("bogus").alias("link")).write_parquet(tmp_path / "exchange.parquet")
    p = invoke_cli("fit", "postal", data, "-o", tmp_path / "q.toml", check=False)
    assert p.returncode == 2 and "link must be on_node or off_node, got 'bogus'" in p.stderr, p.stderr
    assert not (tmp_path / "q.toml").exists()
