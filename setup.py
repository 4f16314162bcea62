"""One Python package, ``tfhadoop``, whose areas live in the project's area folders.

``tfhadoop`` itself (the CLI and the cluster resolution every area shares) is in ``tfhadoop/``;
``tfhadoop.connectors``, ``tfhadoop.spark``, ``tfhadoop.yarn`` and ``tfhadoop.trainer`` are mapped
from ``<area>/python`` so each area keeps its Python next to its JVM sources.
"""
import os

from setuptools import setup

AREAS = {
    "tfhadoop": "tfhadoop",
    "tfhadoop.connectors": "connectors/python",
    "tfhadoop.spark": "spark/python",
    "tfhadoop.yarn": "yarn/python",
    "tfhadoop.trainer": "trainer/python",
}


def _packages():
    """Every package under each area root (folders with an __init__.py), with its folder."""
    packages, package_dir = [], {}
    for name, root in AREAS.items():
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            if "__init__.py" not in files:
                continue
            rel = os.path.relpath(folder, root)
            pkg = name if rel == "." else name + "." + rel.replace(os.sep, ".")
            packages.append(pkg)
            package_dir[pkg] = folder
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()

setup(
    name="tfhadoop",
    version="0.1.0",
    description="TFRecord connectors for Hadoop, Hive and Spark, and a preemption-tolerant TensorFlow trainer on YARN",
    python_requires=">=3.10",
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
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
    extras_require={"test": ["pytest", "pytest-timeout", "hypothesis"]},
    entry_points={"console_scripts": ["tfhadoop = tfhadoop.cli:main"]},
)
