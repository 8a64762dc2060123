"""Writes src/odradek/cli/cluster_up/kafka-3.9.2.lock: the jars of Apache Kafka 3.9.2's broker class path
as Maven resolves them, with each jar's size, SHA-1 and SHA-256.

Maven resolves tests/compat/java/reference-broker/pom.xml (kafka_2.13 3.9.2 and slf4j-reload4j, the
logging binding Kafka's own distribution ships) into .cache/maven, checking each jar against the .sha1
Maven Central publishes; this script checks it again against the .sha1 file Maven kept beside the jar,
so the lock pins what Central serves. `odradek cluster up --kafka N` downloads exactly these jars.

    python tools/write_kafka_lock.py        # rewrite the lock file (needs mvn; network on first run)
    python tools/write_kafka_lock.py --check  # exit 1 if the lock file differs from Maven's resolution
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from odradek.cli.cluster_up.kafka_lock import KAFKA_VERSION, LOCK_FILE  # noqa: E402

POM_PROJECT = REPO / "tests" / "compat" / "java" / "reference-broker"
MAVEN_REPOSITORY = REPO / ".cache" / "maven"
LOCK_PATH = REPO / "src" / "odradek" / "cli" / "cluster_up" / LOCK_FILE
HEADER = f"""\
# Apache Kafka {KAFKA_VERSION}'s broker class path: org.apache.kafka:kafka_2.13:{KAFKA_VERSION} and its
# runtime dependencies as Maven resolves them, with org.slf4j:slf4j-reload4j for its logging, in
# class-path order. Written by tools/write_kafka_lock.py; do not edit.
# group:artifact:version size sha1 sha256
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare with the lock file")
    args = parser.parse_args()
    text = HEADER + "".join(f"{line}\n" for line in lock_lines(resolved_jars()))
    if args.check:
        if LOCK_PATH.read_text("utf-8") != text:
            print(f"{LOCK_PATH} differs from Maven's resolution: run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    LOCK_PATH.write_text(text, "utf-8")
    print(f"wrote {LOCK_PATH}")
    return 0


def resolved_jars() -> list[Path]:
    """The class path Maven builds for the pom, in its order."""
    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "classpath.txt"
        subprocess.run(
            [
                "mvn",
                "-q",
                "-B",
                f"-Dmaven.repo.local={MAVEN_REPOSITORY}",
                "dependency:build-classpath",
                "-Dmdep.includeScope=runtime",
                f"-Dmdep.outputFile={output}",
            ],
            cwd=POM_PROJECT,
            check=True,
        )
        return [Path(entry) for entry in output.read_text().strip().split(":")]


def lock_lines(jars: list[Path]) -> list[str]:
    lines = []
    for jar in jars:
        relative = jar.resolve().relative_to(MAVEN_REPOSITORY.resolve())
        *group, artifact, version, name = relative.parts
        if name != f"{artifact}-{version}.jar":
            raise SystemExit(f"{jar}: not a plain jar of its artifact (a classifier?)")
        data = jar.read_bytes()
        sha1 = hashlib.sha1(data).hexdigest()
        published = Path(f"{jar}.sha1").read_text().split()[0].lower()
        if sha1 != published:
            raise SystemExit(f"{jar}: SHA-1 {sha1} differs from the repository's .sha1 file ({published})")
        sha256 = hashlib.sha256(data).hexdigest()
        lines.append(f"{'.'.join(group)}:{artifact}:{version} {len(data)} {sha1} {sha256}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
