"""Jobs that share a machine ([[jobs]]): each runs as it would alone where
nothing is shared, slows down where links are shared with another job,
starts when told, GOAL files and traces run as jobs too, and bad job tables
are refused with their key path."""

import shutil
from pathlib import Path

import pytest

import idlewave
from idlewave import _engine
from idlewave.scenario import ScenarioError

pytestmark = pytest.mark.unit

NET = {"L_s": 1e-6, "o_s": 1e-7, "g_s": 1e-7, "G_s_per_byte": 1e-10, "ranks_per_node": 1,
       "topology": {"kind": "fat_tree", "radix": 8}}
FLOW = {"model": "flow", "bandwidth_bytes_per_s": 1e10, "taper": 4}
APP = {"kind": "bsp", "ranks": 32, "iterations": 10, "compute_s": 1e-4, "distances": [1, 16], "message_bytes": 65536}
GOAL = Path(__file__).resolve().parent.parent / "examples" / "dissemination_16.goal"
HOG = {"kind": "bsp", "ranks": 32, "iterations": 10, "compute_s": 0.0, "distances": [16], "message_bytes": 4 << 20}


def run(jobs: list[dict], links: dict = FLOW, **net) -> dict:
    return idlewave.simulate({"network": {**NET, "links": links, **net}, "jobs": jobs}).summary


def alone(workload: dict, links: dict = FLOW) -> float:
    return idlewave.simulate({"network": {**NET, "links": links}, "workload": workload}).summary["makespan_s"]


def test_jobs_that_share_nothing_run_as_each_would_alone():
    """Contiguous halves of a radix-8 tree (16 nodes per pod): the app's
    messages stay in its pods, so it ends as the same workload run alone; the
    second job's ranks are renumbered from 32 and end as alone too."""
    s = run([{"name": "app", "workload": APP}, {"name": "other", "workload": {**APP, "distances": [1]}}])
    assert s["workload"] == "jobs" and s["ranks"] == 64
    assert s["job_app_makespan_s"] == pytest.approx(alone(APP), rel=1e-12)
    assert s["job_other_makespan_s"] == pytest.approx(alone({**APP, "distances": [1]}), rel=1e-12)
    assert s["job_app_slowdown"] == s["job_other_slowdown"] == 1.0


def test_a_job_beside_a_bandwidth_hog_slows_down_on_shared_links_only():
    """Nodes drawn at random put the app's and the hog's messages on the same
    up-links of a 4:1 tapered tree: the app slows down (about 1.2×), the hog
    (bound by its own messages) hardly. Contiguous halves share no link."""
    jobs = [{"name": "app", "placement": "random", "workload": APP},
            {"name": "hog", "placement": "random", "workload": HOG}]
    shared = run(jobs)
    assert shared["job_app_slowdown"] > 1.1
    assert shared["job_app_makespan_s"] > shared["job_app_alone_s"]
    # what held the app back: up- and down-links of the tree, more beside the hog than alone
    assert shared["job_app_link_delay_s"] > shared["job_app_link_delay_alone_s"]
    worst = shared["job_app_links_held_back"]
    assert worst and all(w["class"].startswith(("up_", "down_")) for w in worst)
    assert [w["delay_s"] for w in worst] == sorted((w["delay_s"] for w in worst), reverse=True)
    assert sum(w["delay_s"] for w in worst) <= shared["job_app_link_delay_s"] * (1 + 1e-9)
    contiguous = run([{**j, "placement": "contiguous"} for j in jobs])
    assert contiguous["job_app_slowdown"] == 1.0
    assert contiguous["job_app_link_delay_s"] == pytest.approx(contiguous["job_app_link_delay_alone_s"], rel=1e-12)
    # without shared links the jobs have nothing in common: no slowdown at all
    apart = run(jobs, links={"model": "none"})
    assert apart["job_app_slowdown"] == apart["job_hog_slowdown"] == 1.0


def test_a_single_job_is_held_back_by_what_holds_the_run_back():
    """One [[jobs]] table: its links' cost is the run's (it reported 0, as
    -0.0, and no link, whatever the links cost its messages)."""
    s = run([{"name": "a", "workload": {**APP, "distances": [1, 16], "compute_s": 0.0}}],
            {**FLOW, "routing": "random"})
    assert s["flow_delay_s"] > 0
    assert s["job_a_link_delay_s"] == pytest.approx(s["flow_delay_s"], rel=1e-6)  # (the summary rounds to 10 digits)
    assert s["job_a_links_held_back"] and s["job_a_links_held_back"] == s["links_held_back"]
    # alone it is the same run: sharing among its own messages only
    assert s["job_a_link_delay_alone_s"] == pytest.approx(s["flow_delay_s"], rel=1e-6)


def test_a_job_starts_when_told():
    s = run([{"workload": APP}, {"start_s": 2e-3, "workload": {**APP, "distances": [1]}}])
    assert s["job_job1_makespan_s"] == pytest.approx(s["job_job1_alone_s"], rel=1e-12)
    assert s["makespan_s"] == pytest.approx(max(s["job_job0_makespan_s"], 2e-3 + s["job_job1_makespan_s"]), rel=1e-12)


def test_background_traffic_slows_a_job_by_its_pattern():
    """Interleaved with the app on a tree routing up-links at random, an incast
    of the same volume hurts the app more than uniform traffic (here 1.92× and
    1.12×); none of it matters without shared links."""
    traffic = {"kind": "traffic", "ranks": 32, "message_bytes": 1 << 20, "rate_bytes_per_s": 1e10, "rounds": 20}
    slow = {}
    for pattern in ("uniform", "incast"):
        jobs = [{"name": "app", "placement": "interleaved", "workload": APP},
                {"name": "bg", "placement": "interleaved", "workload": {**traffic, "pattern": pattern}}]
        slow[pattern] = run(jobs, links={**FLOW, "routing": "random"})["job_app_slowdown"]
        assert run(jobs, links={"model": "none"})["job_app_slowdown"] == 1.0
        # d-mod-k keeps the interleaved jobs on different up-links: no slowdown at all
        assert run(jobs)["job_app_slowdown"] == 1.0
    # the values docs/jobs.md quotes (seeded: a change of the flow model or of the routes moves them)
    assert slow["uniform"] == pytest.approx(1.12, abs=0.01) and slow["incast"] == pytest.approx(1.92, abs=0.01), slow


@pytest.mark.parametrize("doc, key", [
    ({"workload": {"kind": "bsp", "ranks": 4}, "jobs": [{"workload": APP}]}, "workload"),
    ({"jobs": [{"workload": {"kind": "goal", "path": "no-such.goal"}}]}, "jobs[0].workload.path"),
    ({"jobs": [{"workload": {"kind": "trace", "dir": "no-such-trace"}}]}, "jobs[0].workload.dir"),
    ({"jobs": [{"workload": {"kind": "trace", "dir": "t", "by_call": True}}]}, "jobs[0].workload.by_call"),
    ({"jobs": [{"workload": {"kind": "goal", "path": str(GOAL)}}], "noise": [{"kind": "single", "rank": 16}]}, "noise[0].rank"),
    ({"jobs": [{"nodes": [0, 1], "workload": APP}]}, "jobs[0].nodes"),
    ({"jobs": [{"placement": "nodes", "nodes": [0], "workload": APP}]}, "jobs[0].nodes"),
    ({"jobs": [{"placement": "nodes", "nodes": list(range(33)), "workload": APP}]}, "jobs[0].nodes"),  # one too many
    ({"jobs": [{"workload": {**APP, "ranks": 0}}]}, "jobs[0].workload.ranks"),
    ({"jobs": [{"placement": "everywhere", "workload": APP}]}, "jobs[0].placement"),
    # the results key each job's figures by its name: a second "app" would overwrite the first's
    ({"jobs": [{"name": "app", "workload": APP}, {"name": "app", "workload": APP}]}, "jobs[1].name"),
    ({"jobs": [{"workload": APP}, {"name": "job0", "workload": APP}]}, "jobs[1].name"),
    # nor may one's figure be keyed as another's: "x"'s link_delay_alone_s is "x_link_delay"'s alone_s
    ({"jobs": [{"name": "x", "workload": APP}, {"name": "x_link_delay", "workload": APP}]}, "jobs[1].name"),
    ({"jobs": [{"name": "x_link_delay", "workload": APP}, {"name": "x", "workload": APP}]}, "jobs[1].name"),
])
def test_bad_jobs_are_refused_with_their_key(doc, key):
    with pytest.raises(ScenarioError) as e:
        idlewave.simulate({"network": NET, **doc})
    assert e.value.key == key, str(e.value)


def test_a_node_number_too_large_for_memory_is_refused_at_its_key_at_once():
    """A node number sizes the machine: a typo'd one is refused as a run too
    large for memory is, before anything is allocated (it ran out of memory
    after a minute), at the node's key."""
    nodes = [0, 1, 2, 3, 4000000001, *range(5, 32)]
    with pytest.raises(idlewave.MemoryLimitError) as e:
        idlewave.simulate({"network": NET, "jobs": [{"placement": "nodes", "nodes": nodes, "workload": APP}]})
    assert e.value.key == "jobs[0].nodes[4]" and "node 4000000001 makes a machine of 4000000002 nodes" in str(e.value)


def test_a_goal_file_runs_as_a_job_as_its_scenario_runs_alone(tmp_path, monkeypatch):
    """Its ranks from the file's header, its path relative to the scenario
    file as [workload]'s: alone in [[jobs]] it ends at the picosecond where
    the GOAL scenario ends."""
    (tmp_path / "scn").mkdir()
    shutil.copy(GOAL, tmp_path / "scn" / "d.goal")
    net = '[network]\nranks_per_node = 2\n[network.topology]\nkind = "fat_tree"\nradix = 8\n'
    (tmp_path / "scn" / "alone.toml").write_text(net + '[workload]\nkind = "goal"\npath = "d.goal"\n')
    (tmp_path / "scn" / "job.toml").write_text(net + '[[jobs]]\nname = "g"\n[jobs.workload]\nkind = "goal"\npath = "d.goal"\n')
    monkeypatch.chdir(tmp_path)  # not the scenarios' directory
    alone = idlewave.simulate(tmp_path / "scn" / "alone.toml").summary
    s = idlewave.simulate(tmp_path / "scn" / "job.toml").summary
    assert s["ranks"] == s["job_g_ranks"] == 16
    assert s["makespan_s"] == s["job_g_makespan_s"] == s["job_g_alone_s"] == alone["makespan_s"] > 0


def test_a_trace_replays_as_a_job_as_it_replays_alone(tmp_path):
    _engine.write_synthetic_trace(str(tmp_path), 8, 20)
    for trace in ({"kind": "trace", "dir": str(tmp_path)}, {"kind": "trace", "dir": str(tmp_path), "scale_to": 16}):
        alone = idlewave.simulate({"network": NET, "workload": trace}).summary
        s = run([{"name": "t", "workload": trace}], links={"model": "none"})
        assert s["ranks"] == s["job_t_ranks"] == alone["ranks"]
        assert s["job_t_makespan_s"] == s["job_t_alone_s"] == alone["makespan_s"] > 0, trace


def shift_goal(path: Path, ranks: int, distance: int, size: int) -> dict:
    """A GOAL schedule of two rounds of a shift by `distance` with `size` bytes, as a workload."""
    lines = [f"num_ranks {ranks}"]
    for r in range(ranks):
        to, frm = (r + distance) % ranks, (r - distance) % ranks
        lines += [f"rank {r} {{", f"l1: send {size}b to {to} tag 0", f"l2: recv {size}b from {frm} tag 0",
                  f"l3: send {size}b to {to} tag 1", f"l4: recv {size}b from {frm} tag 1", "l3 requires l2", "}"]
    path.write_text("\n".join(lines) + "\n")
    return {"kind": "goal", "path": str(path)}


def test_a_goal_job_beside_a_built_in_one_on_shared_links(tmp_path):
    """A GOAL schedule of half-machine shifts (4 MiB) beside a bandwidth hog
    on a tapered tree: on contiguous nodes (its own pod) it ends as its GOAL
    scenario alone; on random nodes its messages meet the hog's on the
    up-links and it slows down, the hog no less than alone."""
    goal = shift_goal(tmp_path / "shift.goal", 16, 8, 4 << 20)
    hog = {**HOG, "ranks": 16, "distances": [8]}
    s = run([{"name": "g", "workload": goal}, {"name": "hog", "placement": "random", "workload": hog}])
    assert s["job_g_makespan_s"] == s["job_g_alone_s"] == alone(goal) > 0
    s = run([{"name": "g", "placement": "random", "workload": goal},
             {"name": "hog", "placement": "random", "workload": hog}])
    assert s["job_g_slowdown"] > 1.2 and s["job_hog_slowdown"] >= 1, s
    assert s["job_g_makespan_s"] > s["job_g_alone_s"]


def test_a_bad_goal_file_in_a_job_is_refused_at_its_key(tmp_path):
    (tmp_path / "bad.goal").write_text("num_ranks 2\nrank 0 {\nl1: send 8b to 5 tag 0\n}\nrank 1 {\n}\n")
    scn = tmp_path / "jobs.toml"
    scn.write_text('[[jobs]]\n[jobs.workload]\nkind = "goal"\npath = "missing.goal"\n')
    with pytest.raises(ScenarioError) as e:
        idlewave.simulate(scn)
    assert (e.value.key, e.value.line) == ("jobs[0].workload.path", 4), str(e.value)
    assert "missing.goal" in str(e.value)
    # a header that reads but a schedule that does not: refused when the job's program is built
    with pytest.raises(idlewave.SimulationError) as e:
        idlewave.simulate({"jobs": [{"workload": {"kind": "goal", "path": str(tmp_path / "bad.goal")}}]})
    assert e.value.key == "jobs[0].workload.path" and "bad.goal:3" in str(e.value), str(e.value)


def test_the_placement_example_shows_a_halo_code_slowed_by_an_alltoall_beside_it(tmp_path):
    """examples/jobs_placement.py: contiguous pods share no link (1.00 for
    both jobs); interleaved and random nodes put the halo's messages on the
    alltoall's up-links (the docs quote 1.08–1.10 and 1.03–1.08 over seeds
    1–5); its figure is written."""
    import importlib.util

    from conftest import EXAMPLES

    spec = importlib.util.spec_from_file_location("jobs_placement", EXAMPLES / "jobs_placement.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    found = example.slowdowns(seeds=2)
    assert found["contiguous"] == {"halo": [1.0, 1.0], "alltoall": [1.0, 1.0]}
    assert all(1.08 <= v <= 1.11 for v in found["interleaved"]["halo"]), found
    assert all(1.03 <= v <= 1.05 for v in found["random"]["halo"]), found
    assert all(v > 1.0 for p in ("interleaved", "random") for v in found[p]["alltoall"])
    assert example.figure(found, tmp_path / "jobs_placement.png").stat().st_size > 0


def test_a_scenario_that_lists_no_job_is_refused_at_its_line(tmp_path):
    """`jobs = []` ran [workload]'s default, 64 ranks nobody asked for. A
    checked scenario's own document (summary.json's, a sweep point's) holds
    `jobs = []` for "no jobs" and still runs."""
    scn = tmp_path / "s.toml"
    scn.write_text('seed = 1\njobs = []\n')
    with pytest.raises(ScenarioError) as e:
        idlewave.simulate(scn)
    assert e.value.key == "jobs" and f"{scn}:2:" in str(e.value) and "lists no job" in str(e.value)
    scn.write_text('[workload]\nkind = "bsp"\nranks = 4\niterations = 1\n')
    r = idlewave.simulate(scn)
    assert r.scenario["jobs"] == []
    assert idlewave.simulate(r.scenario).summary["makespan_s"] == r.summary["makespan_s"]
