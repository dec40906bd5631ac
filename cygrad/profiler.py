"""``cygrad.profiler``: torch.profiler's interface over cygrad's recorder.

``profile(activities=..., schedule=..., on_trace_ready=...)`` records, while
it is active, what ``cygrad.autograd.profiler.profile`` records (every
``record_function`` range and every registered op called as a Tensor
method); ``prof.step()`` advances a ``schedule``: steps in its wait and
warm-up phases are not recorded, each active phase is, and when an active
phase ends ``on_trace_ready(prof)`` is called with that phase's events (a
``tensorboard_trace_handler`` writes them as a Chrome trace).  Without a
schedule every step is recorded and ``on_trace_ready`` runs once, on exit.

cygrad computes on the CPU only: asking for ``ProfilerActivity.CUDA`` (or
another device) warns and profiles the CPU.
"""

import enum
import gzip
import os
import shutil
import socket
import time
import warnings

from cygrad.autograd import profiler as _recorder
from cygrad.autograd.profiler import record_function

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function",
           "schedule", "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """The devices a profile can record; cygrad records ``CPU``."""
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks of a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step -> ``ProfilerAction`` function: after ``skip_first`` steps,
    cycles of ``wait`` idle, ``warmup`` warm-up and ``active`` recorded steps
    (the last one saves), ``repeat`` times (0: for ever).  With
    ``skip_first_wait`` the first cycle starts at its warm-up."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler "
                      "results", UserWarning, stacklevel=2)
    cycle = wait + warmup + active

    def action(step):
        if step < 0:
            raise ValueError(f"profiler schedule: step {step} is negative")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD_AND_SAVE if phase == cycle - 1
                else ProfilerAction.RECORD)
    return action


def _always_record(step):
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """torch.profiler.profile: a context manager (or ``start()``/``stop()``)
    whose ``step()`` follows ``schedule``; ``key_averages()``, ``events()``
    and ``export_chrome_trace(path)`` read the latest recorded phase.

    ``record_shapes``, ``profile_memory``, ``with_stack``, ``with_flops`` and
    ``with_modules`` are accepted and record nothing extra."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None,
                 execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None):
        wanted = set(activities) if activities else supported_activities()
        if use_cuda:
            wanted.add(ProfilerActivity.CUDA)
        for a in sorted(wanted - supported_activities(), key=lambda a: a.value):
            warnings.warn(f"cygrad runs on the CPU only: {a} is not profiled",
                          UserWarning, stacklevel=2)
        self.activities = wanted & supported_activities()
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._rec = None            # the recorder of the phase being recorded
        self._done = None           # the last finished one
        self._running = False

    # -- the phases ---------------------------------------------------------------
    def _begin(self):
        self._rec = _recorder.profile()
        self._rec.__enter__()

    def _finish(self, save):
        self._rec.__exit__(None, None, None)
        self._done, self._rec = self._rec, None
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self):
        self._running = True
        if self.current_action in _RECORDING:
            self._begin()

    def stop(self):
        if self._rec is not None:
            self._finish(save=True)
        self._running = False

    def step(self):
        """End this step; the schedule says what the next one does."""
        before = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if not self._running:
            return
        if self._rec is not None and (before == ProfilerAction.RECORD_AND_SAVE
                                      or self.current_action not in _RECORDING):
            self._finish(save=before == ProfilerAction.RECORD_AND_SAVE)
        if self._rec is None and self.current_action in _RECORDING:
            self._begin()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- results ---------------------------------------------------------------
    def _latest(self):
        rec = self._rec if self._rec is not None else self._done
        if rec is None:
            raise RuntimeError("profile: no step has been recorded yet")
        return rec

    def events(self):
        return self._latest().events()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._latest().key_averages()

    def export_chrome_trace(self, path):
        """Write the latest phase as a Chrome trace (gzipped when ``path``
        ends in ``.gz``)."""
        if not str(path).endswith(".gz"):
            self._latest().export_chrome_trace(path)
            return
        plain = str(path)[:-3]
        self._latest().export_chrome_trace(plain)
        with open(plain, "rb") as src, gzip.open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(plain)


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` that writes each saved phase to
    ``dir_name/<worker>.<time in ms>.pt.trace.json`` (``.gz`` with
    ``use_gzip``), the names TensorBoard's profiler plugin reads."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        prof.export_chrome_trace(os.path.join(dir_name, name + (".gz" if use_gzip
                                                                 else "")))
    return handler
