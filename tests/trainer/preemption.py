"""YARN preemption on the embedded cluster: applications that hold containers (to take resources
from a job or leave it too few) and the worker preemption several trainer tests drive."""
from __future__ import annotations

from tests.trainer import jobs


def hold_containers(client, name: str, queue: str, instances: int, memory: int, gpus: int = 0):
    """A YARN application that holds ``instances`` containers of ``memory`` MiB (and ``gpus``
    yarn.io/gpu each) in ``queue`` (sleeping) until shut down: to take resources from the trainer
    or leave it too few."""
    import skein

    return client.submit_and_connect(skein.ApplicationSpec(
        name=name, queue=queue, max_attempts=1,
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
        services={"task": skein.Service(instances=instances,
                                        resources=skein.Resources(memory=memory, vcores=1, gpus=gpus),
                                        script="sleep 600")}))


def start_preemptible_job(hadoop_cluster, dataset, train=None, extra=()):
    """Start (in the background) the job `preempt_a_worker` drives: 2 x 5 GB workers in `train`
    with --min-workers 1 and endless epochs (`preempt_a_worker` stops it), once no container of an
    earlier test is left, since the sizes are chosen so that `urgent` must take exactly one worker.
    ``train`` starts it (the PS mode's `jobs.train` unless given) with ``extra`` options."""
    jobs.wait(lambda: jobs.cluster_idle(hadoop_cluster.conf), 120, "the cluster's containers of earlier tests to end")
    return (train or jobs.train)(hadoop_cluster, dataset, background=True,
                                 extra=[*jobs.FAULT_JOB, "--workers", "2", "--min-workers", "1", "--epochs",
                                        str(jobs.ENDLESS), "--queue", "train", "--worker-memory", "5g", *extra])


def preempt_a_worker(hadoop_cluster, run, proc, back, alone_timeout: float = 180) -> None:
    """Drive a job of 2 x 5 GB workers in `train` (with --min-workers 1) through a preemption: after
    two epochs `urgent` asks for 3 x 2 GB and the preemption monitor takes back the newest
    container of `train`, a worker; the job must train two more epochs with the other worker while
    the replacement waits, then gets the resources back. Once ``back(app_id)`` says the replacement
    takes part and two more epochs are checkpointed, `tfhadoop stop` ends it: exit status 0."""

    from tfhadoop.yarn.client import skein_client

    urgent = None
    app = jobs.app_id(proc)
    diagnose = lambda: jobs.diagnosis(hadoop_cluster, run)  # noqa: E731
    try:
        jobs.wait_epochs(hadoop_cluster, run, proc, 2)
        with skein_client() as client:
            urgent = hold_containers(client, "urgent", queue="urgent", instances=3, memory=2048)
            lost = jobs.wait(lambda: jobs.lost_events(run), 120, "a preempted container", diagnose)
            assert lost[0]["role"] == "worker" and lost[0]["diagnostics"] == "Container preempted by scheduler", lost
            epoch_at_loss = jobs.state_epoch(run)
            assert epoch_at_loss is not None, "no checkpoint after two epochs"
            jobs.wait(lambda: (jobs.state_epoch(run) or 0) >= epoch_at_loss + 2, alone_timeout,
                      "training on with one worker", diagnose)
            urgent.shutdown()
            urgent = None
        jobs.stop_when(hadoop_cluster, run, proc, app, jobs.epochs_after(run, lambda: back(app)),
                       "the replacement back in training and two more epochs")
        out, err = proc.communicate(timeout=900)
    finally:
        if urgent is not None:
            urgent.shutdown()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out + err)[-4000:]


def rejoined(app: str) -> bool:
    """PS mode: a replaced worker has rejoined the running training (the coordinator's ``rejoins``)."""
    from tfhadoop.trainer import protocol

    return bool(jobs.kv(app, protocol.KV_REJOINS))
