#!/usr/bin/env bash
# Resolves Apache Iceberg's REST catalog server (the iceberg-open-api test
# fixture) and its runtime dependencies from Maven Central into a lib
# directory, for the cluster test that commits Iceberg topics through an
# external REST catalog (`make test-cluster-iceberg`):
#
#   deploy/iceberg-rest/setup.sh [LIB]   # default bin/iceberg-rest-lib; idempotent
#
# Then, to run it by hand (tables under /tmp/wh, SQLite catalog in /tmp):
#
#   CATALOG_WAREHOUSE=file:///tmp/wh CATALOG_URI=jdbc:sqlite:/tmp/rest.db \
#   CATALOG_REST_PORT=8181 java -cp 'LIB/*' org.apache.iceberg.rest.RESTCatalogServer
#
# Needs java (17+) and mvn.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${1:-$here/../../bin/iceberg-rest-lib}
for tool in java mvn; do
	command -v "$tool" >/dev/null || { echo "setup.sh: $tool not found (apt-get install openjdk-17-jre-headless maven)" >&2; exit 1; }
done
# The .complete marker is written last, so an interrupted copy is redone
# rather than half-used.
if [[ ! -f $lib/.complete ]]; then
	rm -rf "$lib" && mkdir -p "$lib"
	echo "setup.sh: resolving Iceberg's REST catalog server from Maven Central into $lib"
	if ! mvn -B -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$lib" >"$lib/mvn.log" 2>&1; then
		tail -n 30 "$lib/mvn.log" >&2
		echo "setup.sh: mvn failed; full log in $lib/mvn.log" >&2
		exit 1
	fi
	ls "$lib"/iceberg-open-api-*-test-fixtures.jar >/dev/null || { echo "setup.sh: the iceberg-open-api test fixture is missing after resolution" >&2; exit 1; }
	touch "$lib/.complete"
fi
echo "setup.sh: $(find "$lib" -name '*.jar' | wc -l) jars in $lib"
