"""cygrad.profiler (torch.profiler's interface): schedules, the steps each
phase records, when on_trace_ready runs, and the traces it writes, against
torch."""

import gzip
import json
import warnings

import pytest

import cygrad

torch = pytest.importorskip("torch")

SCHEDULES = [
    {"wait": 1, "warmup": 1, "active": 2},
    {"wait": 0, "warmup": 1, "active": 1, "repeat": 2},
    {"wait": 2, "warmup": 1, "active": 3, "repeat": 1, "skip_first": 3},
    {"wait": 2, "warmup": 1, "active": 1, "skip_first_wait": 1, "repeat": 2},
]


@pytest.mark.parametrize("kw", SCHEDULES)
def test_schedule_actions_match_torch(kw):
    ours, theirs = cygrad.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def _run(lib, kw, steps):
    P = lib.profiler
    saved = []
    x = lib.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch's warm-up and activity notes
        sch = P.schedule(**kw) if kw else None
        with P.profile(activities=[P.ProfilerActivity.CPU], schedule=sch,
                       on_trace_ready=lambda p: saved.append(
                           (p.step_num, sorted(e.key for e in p.key_averages()
                                               if e.key.startswith("step"))))) as prof:
            for i in range(steps):
                with P.record_function(f"step{i}"):
                    x.exp()
                prof.step()
    return saved


@pytest.mark.parametrize("kw, steps", [(SCHEDULES[0], 10), (SCHEDULES[1], 7),
                                       (SCHEDULES[3], 9), (None, 4),
                                       ({"wait": 0, "warmup": 0, "active": 1}, 3)])
def test_each_saved_phase_holds_its_steps_as_torch(kw, steps):
    assert _run(cygrad, kw, steps) == _run(torch, kw, steps)


def test_bad_schedules_and_devices():
    with pytest.raises(ValueError):
        cygrad.profiler.schedule(wait=1, warmup=1, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        cygrad.profiler.schedule(wait=1, warmup=0, active=1)
    with pytest.warns(UserWarning, match="CPU only"):
        cygrad.profiler.profile(activities=[cygrad.profiler.ProfilerActivity.CUDA])
    assert cygrad.profiler.supported_activities() == {
        cygrad.profiler.ProfilerActivity.CPU}


@pytest.mark.parametrize("use_gzip", [False, True])
def test_tensorboard_handler_writes_a_chrome_trace(tmp_path, use_gzip):
    P = cygrad.profiler
    with P.profile(schedule=P.schedule(wait=0, warmup=1, active=2),
                   on_trace_ready=P.tensorboard_trace_handler(
                       str(tmp_path), "w0", use_gzip=use_gzip)) as prof:
        for _ in range(3):
            with P.record_function("train_step"):
                cygrad.ones(4).exp().sum()
            prof.step()
    files = sorted(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.startswith("w0.")
    assert files[0].name.endswith(".pt.trace.json" + (".gz" if use_gzip else ""))
    raw = gzip.decompress(files[0].read_bytes()) if use_gzip else files[0].read_bytes()
    names = [e["name"] for e in json.loads(raw)["traceEvents"]]
    assert names.count("train_step") == 2 and "cygrad::exp" in names
