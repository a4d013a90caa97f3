"""A distributed Rivet run from Airflow: N mapped tasks each run `rivet run --worker`.

Every mapped task names the same run (Airflow's ``run_id``), so the workers share one chunked run through the
PostgreSQL state (``RIVET_STATE_URL``): each claims chunks until none is left and exits 0; whichever commits
last writes ``manifest.json`` and ``_SUCCESS``. A retried task simply claims again. The map index is only
logged: which chunks a task runs is decided by the state store. See docs/distributed.md.
"""

from __future__ import annotations

import pendulum
from airflow.decorators import dag, task
from airflow.operators.bash import BashOperator

WORKERS = 4


@dag(
    dag_id="rivet_orders_distributed",
    schedule="0 2 * * *",
    start_date=pendulum.datetime(2026, 12, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["rivet"],
)
def rivet_orders_distributed():
    @task
    def worker_envs(**context) -> list[dict[str, str]]:
        # One environment per worker; all name the DAG run, so they join the same Rivet run.
        return [{"RIVET_RUN_ID": context["run_id"], "WORKER_SLOT": str(slot)} for slot in range(WORKERS)]

    BashOperator.partial(
        task_id="rivet_worker",
        # WORKER_SLOT goes to the log only. RIVET_STATE_URL, the source URL and the S3 credentials come from the
        # Airflow workers' own environment (e.g. Kubernetes Secrets), never from the DAG file: append_env keeps them.
        bash_command='echo "worker $WORKER_SLOT of run $RIVET_RUN_ID" && rivet run -c /opt/rivet/export.yaml --worker',
        append_env=True,
        retries=3,
    ).expand(env=worker_envs())


rivet_orders_distributed()
