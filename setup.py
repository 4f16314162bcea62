"""One Python package, ``tfhadoop``: a PEP 420 namespace package whose parts live in the areas.

Each area keeps its Python next to its JVM sources, in a folder that mirrors the module name, so
editors, Pyright and import-graph tools resolve ``tfhadoop.<area>.<module>`` from the file tree
alone, without running an import hook:

    tfhadoop/                                 tfhadoop.cli, .hadoop, .errors, ... (shared core)
    connectors/python/tfhadoop/connectors/    tfhadoop.connectors
    spark/python/tfhadoop/spark/              tfhadoop.spark
    yarn/python/tfhadoop/yarn/                tfhadoop.yarn
    trainer/python/tfhadoop/trainer/          tfhadoop.trainer

The import roots are the project folder and every ``<area>/python`` that holds a ``tfhadoop``
folder: a wheel maps each package to its folder, and the development install
(tools/bootstrap-python, same rule) puts those roots on the venv's path with a .pth file.
"""
import glob
import os

from setuptools import find_namespace_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOTS = ["."] + sorted(os.path.dirname(p) for p in glob.glob("*/python/tfhadoop", root_dir=HERE))


def _packages():
    """Every ``tfhadoop`` package under each import root, with the folder it lives in."""
    packages, package_dir = [], {}
    for root in ROOTS:
        for pkg in find_namespace_packages(where=root, include=["tfhadoop", "tfhadoop.*"]):
            folder = os.path.join(root, *pkg.split("."))
            if any(part.startswith(("__", ".")) for part in pkg.split(".")):
                continue
            if pkg == "tfhadoop" and root != ".":
                continue  # the namespace's own folder in each area holds only that area
            packages.append(pkg)
            package_dir[pkg] = os.path.normpath(folder)
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()

setup(
    name="tfhadoop",
    version="0.1.0",
    description="TFRecord connectors for Hadoop, Hive and Spark, and a preemption-tolerant TensorFlow trainer on YARN",
    python_requires=">=3.10",
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    package_data={"": ["*.so"]},
    include_package_data=True,
    install_requires=[
        "pyspark[sql]==4.3.0",
        "pandas<3",  # pyspark 4.3 warns it does not fully support pandas 3
        "tensorflow==2.21.0",
        "tf-keras==2.21.0",
        "pyarrow",
        "hdfs==2.7.3",
        "hdfs-native",
        "skein==0.8.2",
        "google-crc32c",
        "tqdm",
        "pyyaml",
    ],
    extras_require={
        "test": ["pytest", "pytest-timeout", "pytest-xdist", "hypothesis"],
        # `tfhadoop tensorboard`: TensorFlow 2.21 no longer pulls TensorBoard in, and the trainer's
        # containers write event files without it (trainer/summaries.py).
        "tensorboard": ["tensorboard==2.21.0"],
        # GPU figures per container (trainer/nvml.py): optional, without it a sample has none.
        "gpu": ["nvidia-ml-py>=12"],
        # --mlflow-tracking-uri: the client only (the REST API); the tracking server is the team's own.
        "mlflow": ["mlflow-skinny>=3"],
    },
    entry_points={"console_scripts": ["tfhadoop = tfhadoop.cli:run"]},
)
