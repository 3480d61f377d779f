#!/usr/bin/env bash
# dist-test: install each artifact of dist/ the way a user would, in a scratch directory
# outside the source tree, and run the whole conformance suite (both layers) against the
# installed copy. Called by `make dist-test` (dist.mk):
#
#   DIST=/abs/dist VERSION=0.1.0 CONFORMANCE=/abs/afterburn-conformance tools/dist-test.sh [go] [python] [node] [java]
#
# go      every module of go/go.work (the watchdog's, the library's, each adapter's) served from
#         a file module proxy (tools/modproxy) as vVERSION: `go install …/cmd/afterburn-watchdog@vVERSION`
#         into a scratch GOBIN; the Go fixture built in a scratch module that requires the library
#         (github.com/afterburn-dev/afterburn/go/afterburn) at vVERSION from that proxy, and
#         nothing else in its go list -m all; each adapter fetched and built at vVERSION
# python  the wheel pip-installed into a fresh venv; the fixture copied out of python/tests
# node    the npm tarball installed into a fresh project (undici from the registry); the fixture
#         copied out of node/test, requiring the package by name; also through the `afterburn` bin
# java    jar + POM (+ sources, javadoc) installed into a scratch local Maven repository; the
#         fixture built against dev.afterburn:afterburn-runtime:VERSION in a scratch project
#
# python, node and java run under the watchdog from dist/'s linux tarball for this machine.
# Each suite run prints its failures (with their details) and its last line; each artifact
# ends with "<lang>: N passed, N failed". Exit status 1 when any check failed or any step
# broke. The scratch directory is removed unless something failed or KEEP=1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${DIST:=$ROOT/dist}" "${CONFORMANCE:=$ROOT/conformance/bin/afterburn-conformance}"
: "${GO:=go}" "${PYTHON_SYS:=python3}" "${NODE:=node}" "${NPM:=npm}" "${MVN:=mvn}" "${JAVA:=java}"
[ -n "${VERSION:-}" ] || { echo "dist-test: set VERSION, the packages' version (e.g. 0.1.0)" >&2; exit 2; }
LANGS=("$@")
[ ${#LANGS[@]} -gt 0 ] || LANGS=(go python node java)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/afterburn-dist-test.XXXXXX")
case "$WORK" in "$ROOT"/*) echo "dist-test: the scratch directory $WORK is inside the source tree" >&2; exit 2 ;; esac
FAILED=0
cleanup() {
	if [ "$FAILED" = 0 ] && [ "${KEEP:-0}" != 1 ]; then
		chmod -R u+w "$WORK" 2>/dev/null || true # the Go module cache is read-only
		rm -rf "$WORK"
	else
		echo "dist-test: scratch directory and logs kept in $WORK"
	fi
}
trap cleanup EXIT

say() { printf '\n== %s\n' "$*"; }
die() { echo "dist-test: $*" >&2; FAILED=1; exit 1; }

# proof LABEL: a check that what runs is the installed artifact; fails the run if it does not hold.
proof() { echo "   ok: $*"; }

# ---- the suite --------------------------------------------------------------------------
declare -A PASSED FAILS SKIPPED RUNS WALL STATUS
SPEC=(-spec "$ROOT/spec/PROTOCOL.md" -vectors "$ROOT/conformance/vectors")

# suite LANG DIR WATCHDOG FUNCTION [FLAGS...]: one run of the conformance suite from DIR, with
# its full output in $WORK/logs; prints the failures and the last line, adds up the counts.
suite() {
	local lang=$1 dir=$2 watchdog=$3 function=$4; shift 4
	local n=$((${RUNS[$lang]:-0} + 1)) log rc=0 last
	RUNS[$lang]=$n
	log=$WORK/logs/$lang-$n.log
	mkdir -p "$WORK/logs"
	echo "-- $lang run $n: -function \"$function\" $*"
	(cd "$dir" && "$CONFORMANCE" "${SPEC[@]}" -watchdog "$watchdog" -function "$function" "$@") >"$log" 2>&1 || rc=$?
	# a failing check's line and its indented details
	awk '/^FAIL /{p=1; print; next} /^(PASS|SKIP) /{p=0} p && /^[ \t]/{print}' "$log"
	last=$(tail -n 1 "$log")
	echo "   $last (exit $rc; log $log)"
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)? ]]; then
		PASSED[$lang]=$((${PASSED[$lang]:-0} + BASH_REMATCH[1]))
		FAILS[$lang]=$((${FAILS[$lang]:-0} + BASH_REMATCH[2]))
		SKIPPED[$lang]=$((${SKIPPED[$lang]:-0} + ${BASH_REMATCH[4]:-0}))
	else
		FAILS[$lang]=$((${FAILS[$lang]:-0} + 1)) # the suite did not finish: count it as a failure
	fi
	[ "$rc" = 0 ] || FAILS[$lang]=$((${FAILS[$lang]:-0} > 0 ? ${FAILS[$lang]} : 1))
}

# The watchdog from dist/ for this machine, for the libraries' runs.
dist_watchdog() {
	local arch
	case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) die "no watchdog tarball for $(uname -m)" ;; esac
	local name=afterburn-watchdog-$VERSION-linux-$arch
	if [ ! -x "$WORK/watchdog/$name/afterburn-watchdog" ]; then
		mkdir -p "$WORK/watchdog"
		tar -C "$WORK/watchdog" -xzf "$DIST/$name.tar.gz"
		[ -f "$WORK/watchdog/$name/LICENSE" ] || die "$name.tar.gz has no LICENSE"
	fi
	WATCHDOG=$WORK/watchdog/$name/afterburn-watchdog
}

# ---- Go: go install from a module proxy ---------------------------------------------------
# go/ is a workspace of modules (go/go.work): the watchdog's (go/), the library's (go/afterburn,
# standard library only) and one per adapter (go/afterburn/<adapter>). A release tags each
# (dist.mk, `make dist-go-tags`); here each is served at vVERSION from one file module proxy.
test_go() {
	local d=$WORK/go root=github.com/afterburn-dev/afterburn
	local mod=$root/go lib=$root/go/afterburn
	mkdir -p "$d/proxy" "$d/bin" "$d/home" "$d/fixture" "$d/adapters"
	# The release as the proxy would serve it: each module's zip at vVERSION (a module's zip
	# leaves out the modules nested in it, as the proxy's does).
	(cd "$ROOT/tools/modproxy" && "$GO" build -o "$d/modproxy" .)
	local dirs=() m
	for m in $(awk '/^use \(/ {u = 1; next} u && /^\)/ {u = 0} u && $1 ~ /^\./ {print $1}' "$ROOT/go/go.work"); do
		dirs+=("$ROOT/go/${m#./}")
	done
	[ ${#dirs[@]} -ge 3 ] || die "go/go.work lists ${#dirs[@]} modules; want the watchdog's, the library's and the adapters'"
	for m in "${dirs[@]}"; do "$d/modproxy" -dir "$m" -version "v$VERSION" -out "$d/proxy"; done
	proof "modules served at v$VERSION from file://$d/proxy: $(cd "$d/proxy" && find . -name list -printf '%h\n' | sed 's#^\./##; s#/@v$##' | sort | tr '\n' ' ')"
	# A clean module cache; dependencies (Prometheus, x/sys, the adapters' SDKs) come from this
	# machine's module download cache when it has them (the same files, checked against go.sum /
	# the checksum database), else from proxy.golang.org. Our modules are not in the checksum
	# database: GONOSUMDB names them all.
	local cache
	cache=$("$GO" env GOMODCACHE)/cache/download
	export GOPROXY="file://$d/proxy,file://$cache,https://proxy.golang.org" GONOSUMDB=$root \
		GOMODCACHE=$d/modcache GOBIN=$d/bin GOFLAGS=-modcacherw GOWORK=off GOTOOLCHAIN=local
	(cd "$d/home" && "$GO" install "$mod/cmd/afterburn-watchdog@v$VERSION")
	local info
	info=$("$GO" version -m "$d/bin/afterburn-watchdog")
	grep -qE "^[[:space:]]+mod[[:space:]]+${mod}[[:space:]]+v${VERSION}[[:space:]]" <<<"$info" ||
		die "the installed watchdog was not built from $mod v$VERSION: $info"
	proof "go install $mod/cmd/afterburn-watchdog@v$VERSION -> $d/bin/afterburn-watchdog (build info: mod $mod v$VERSION)"

	# The Go fixture (it imports the library only) in a module of its own that requires the
	# library at vVERSION.
	find "$ROOT/go/cmd/afterburn-fixture" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$d/fixture/" \;
	cat >"$d/fixture/go.mod" <<-EOF
		module example.com/afterburn-fixture

		go 1.26.0

		require $lib v$VERSION
	EOF
	(cd "$d/fixture" && "$GO" mod tidy && "$GO" build -o afterburn-fixture .)
	info=$("$GO" version -m "$d/fixture/afterburn-fixture")
	grep -qE "^[[:space:]]+dep[[:space:]]+${lib}[[:space:]]+v${VERSION}[[:space:]]" <<<"$info" ||
		die "the fixture was not built against $lib v$VERSION: $info"
	local others
	others=$(cd "$d/fixture" && "$GO" list -m all | grep -vxE "example.com/afterburn-fixture|$lib v$VERSION" || true)
	[ -z "$others" ] || die "a function importing only the library pulls in other modules: $others"
	proof "fixture module example.com/afterburn-fixture built against $lib v$VERSION (build info: dep; go list -m all: the library only)"

	local goenv=(GOPROXY="$GOPROXY" GONOSUMDB="$GONOSUMDB" GOMODCACHE="$GOMODCACHE" GOFLAGS="$GOFLAGS" GOWORK=off GOTOOLCHAIN=local)
	unset GOPROXY GONOSUMDB GOMODCACHE GOBIN GOFLAGS GOWORK GOTOOLCHAIN

	suite go "$d" "$d/bin/afterburn-watchdog" "$d/fixture/afterburn-fixture"

	# Each adapter from the proxy, as a function's go.mod gets it (`go get` of the adapter
	# alone): it resolves and builds. After the suite, so that a broken adapter still lets the
	# watchdog and the library be tested.
	export "${goenv[@]}"
	for m in "${dirs[@]}"; do
		case "$m" in "$ROOT/go/afterburn/"*) ;; *) continue ;; esac
		local path=$lib/${m#"$ROOT/go/afterburn/"} a=$d/adapters/$(basename "$m")
		mkdir -p "$a"
		printf 'module example.com/adapter\n\ngo 1.26.0\n' >"$a/go.mod"
		(cd "$a" && "$GO" get "$path@v$VERSION" && "$GO" build "$path") >"$a.log" 2>&1 ||
			{ cat "$a.log"; die "$path@v$VERSION does not build from the proxy"; }
		grep -qE "^[[:space:]]*$lib v$VERSION( // indirect)?\$" "$a/go.mod" || die "$path@v$VERSION selects no $lib v$VERSION: $(cat "$a/go.mod")"
		proof "$path@v$VERSION resolves and builds (with $lib v$VERSION)"
	done
	unset GOPROXY GONOSUMDB GOMODCACHE GOFLAGS GOWORK GOTOOLCHAIN
}

# ---- Python: the wheel in a fresh venv -----------------------------------------------------
test_python() {
	local d=$WORK/python whl=$DIST/afterburn_runtime-$VERSION-py3-none-any.whl
	[ -f "$whl" ] || die "no $whl"
	dist_watchdog
	mkdir -p "$d/fixture"
	"$PYTHON_SYS" -m venv "$d/venv"
	local py=$d/venv/bin/python
	(cd "$d" && env -u PYTHONPATH "$py" -m pip install --quiet --disable-pip-version-check "$whl")
	cp "$ROOT"/python/tests/fixture/*.py "$d/fixture/"
	# The import must come from the venv's site-packages, never from python/src.
	local where
	where=$(cd "$d" && env -u PYTHONHOME PYTHONPATH="$d/fixture" PYTHONNOUSERSITE=1 "$py" -c '
import importlib.metadata, sysconfig, afterburn_runtime
print(afterburn_runtime.__file__, sysconfig.get_paths()["purelib"], importlib.metadata.version("afterburn-runtime"))')
	read -r file purelib version <<<"$where"
	case "$file" in "$purelib"/afterburn_runtime/__init__.py) ;; *) die "afterburn_runtime imported from $file, not from $purelib" ;; esac
	case "$file" in "$ROOT"/*) die "afterburn_runtime imported from the source tree: $file" ;; esac
	[ "$version" = "$VERSION" ] || die "installed afterburn-runtime is $version, not $VERSION"
	proof "afterburn_runtime $version imported from $file"

	local env="env PYTHONPATH=$d/fixture PYTHONNOUSERSITE=1"
	suite python "$d" "$WATCHDOG" "$env $py -m afterburn_runtime afterburn_fixture:handle"
	suite python "$d" "$WATCHDOG" "env PYTHONNOUSERSITE=1 $py $d/fixture/serve_fixture.py"
	suite python "$d" "$WATCHDOG" "$env $py -m afterburn_runtime --asgi asgi_fixture:app"
	suite python "$d" "$WATCHDOG" "$env $py -m afterburn_runtime --wsgi wsgi_fixture:app"
}

# ---- Node: the tarball in a fresh npm project ----------------------------------------------
test_node() {
	local d=$WORK/node tgz=$DIST/afterburn-runtime-$VERSION.tgz
	[ -f "$tgz" ] || die "no $tgz"
	dist_watchdog
	mkdir -p "$d/app/fixture"
	printf '{ "name": "afterburn-dist-test", "version": "1.0.0", "private": true }\n' >"$d/app/package.json"
	(cd "$d/app" && "$NPM" install --no-audit --no-fund --loglevel=error "$tgz")
	# The fixture's files, requiring the package by its name: any relative require of the package
	# root (../../, ../../index.js) or of its files becomes afterburn-runtime[/…].
	local f
	for f in "$ROOT"/node/test/fixture/*.js; do
		sed -E "s#require\\((['\"])\\.\\.(/\\.\\.)*(/|/index|/index\\.js)?\\1\\)#require('afterburn-runtime')#g;
			s#require\\((['\"])\\.\\.(/\\.\\.)*/testing(\\.js)?\\1\\)#require('afterburn-runtime/testing')#g" \
			"$f" >"$d/app/fixture/$(basename "$f")"
	done
	if grep -nE "require\\(['\"]\\.\\./" "$d"/app/fixture/*.js; then
		die "the fixture copy still requires a file outside its directory (above)"
	fi
	local resolved undici
	resolved=$(cd "$d/app/fixture" && "$NODE" -p "require.resolve('afterburn-runtime')")
	undici=$(cd "$d/app/node_modules/afterburn-runtime" && "$NODE" -p "require.resolve('undici')")
	[ "$resolved" = "$d/app/node_modules/afterburn-runtime/index.js" ] || die "afterburn-runtime resolves to $resolved"
	case "$undici" in "$d/app/node_modules/undici/"*) ;; *) die "undici resolves to $undici" ;; esac
	local types
	types=$("$NODE" -p "require('$d/app/node_modules/afterburn-runtime/package.json').types")
	[ -f "$d/app/node_modules/afterburn-runtime/$types" ] || die "package.json types $types is not in the package"
	proof "afterburn-runtime resolves to $resolved; undici to $undici; types $types present"
	[ -x "$d/app/node_modules/.bin/afterburn" ] || die "the afterburn bin was not installed"

	suite node "$d/app" "$WATCHDOG" "$NODE $d/app/fixture/fixture.js"
	suite node "$d/app" "$WATCHDOG" "$d/app/node_modules/.bin/afterburn $d/app/fixture/fixture.js" -layer e2e
}

# ---- Java: jar and POM in a scratch local Maven repository ---------------------------------
test_java() {
	local d=$WORK/java a=afterburn-runtime-$VERSION
	local repo=$d/m2 mvn=("$MVN" -B -q -Dstyle.color=never)
	for f in "$a.jar" "$a.pom" "$a-sources.jar" "$a-javadoc.jar"; do [ -f "$DIST/$f" ] || die "no $DIST/$f"; done
	dist_watchdog
	mkdir -p "$d/fixture/src/main"
	# Only the artifacts from dist/ are in this repository; everything else (Netty, Jackson,
	# the plugins) is downloaded from Maven Central into it.
	echo "   mvn install:install-file $a.jar, .pom, -sources.jar, -javadoc.jar (log $d/mvn-install.log)"
	(cd "$d" && "${mvn[@]}" -Dmaven.repo.local="$repo" \
		org.apache.maven.plugins:maven-install-plugin:3.1.4:install-file \
		-Dfile="$DIST/$a.jar" -DpomFile="$DIST/$a.pom" \
		-Dsources="$DIST/$a-sources.jar" -Djavadoc="$DIST/$a-javadoc.jar") >"$d/mvn-install.log" 2>&1 ||
		{ cat "$d/mvn-install.log"; die "mvn install:install-file failed"; }
	cp -R "$ROOT/java/fixture/src/main/." "$d/fixture/src/main/"
	cat >"$d/fixture/pom.xml" <<-EOF
		<?xml version="1.0" encoding="UTF-8"?>
		<project xmlns="http://maven.apache.org/POM/4.0.0"
		         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
		         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
		  <modelVersion>4.0.0</modelVersion>
		  <groupId>example.afterburn</groupId>
		  <artifactId>fixture</artifactId>
		  <version>1</version>
		  <properties>
		    <maven.compiler.release>17</maven.compiler.release>
		    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
		  </properties>
		  <dependencies>
		    <dependency>
		      <groupId>dev.afterburn</groupId>
		      <artifactId>afterburn-runtime</artifactId>
		      <version>$VERSION</version>
		    </dependency>
		  </dependencies>
		  <build>
		    <plugins>
		      <plugin>
		        <groupId>org.apache.maven.plugins</groupId>
		        <artifactId>maven-compiler-plugin</artifactId>
		        <version>3.16.0</version>
		      </plugin>
		      <plugin>
		        <groupId>org.apache.maven.plugins</groupId>
		        <artifactId>maven-resources-plugin</artifactId>
		        <version>3.3.1</version>
		      </plugin>
		      <plugin>
		        <groupId>org.apache.maven.plugins</groupId>
		        <artifactId>maven-jar-plugin</artifactId>
		        <version>3.5.1</version>
		      </plugin>
		      <plugin>
		        <groupId>org.apache.maven.plugins</groupId>
		        <artifactId>maven-surefire-plugin</artifactId>
		        <version>3.6.1</version>
		      </plugin>
		      <plugin>
		        <groupId>org.apache.maven.plugins</groupId>
		        <artifactId>maven-dependency-plugin</artifactId>
		        <version>3.9.0</version>
		      </plugin>
		    </plugins>
		  </build>
		</project>
	EOF
	echo "   mvn package: the fixture against dev.afterburn:afterburn-runtime:$VERSION (log $d/mvn-package.log)"
	(cd "$d/fixture" && "${mvn[@]}" -Dmaven.repo.local="$repo" package dependency:build-classpath \
		-Dmdep.outputFile="$d/classpath.txt" -Dmdep.includeScope=runtime) >"$d/mvn-package.log" 2>&1 ||
		{ cat "$d/mvn-package.log"; die "the fixture's Maven build failed"; }
	local cp installed
	cp=$(<"$d/classpath.txt")
	installed=$repo/dev/afterburn/afterburn-runtime/$VERSION/$a.jar
	grep -q "$installed" <<<"$cp" || die "the fixture's classpath does not hold $installed: $cp"
	cmp -s "$installed" "$DIST/$a.jar" || die "$installed differs from $DIST/$a.jar"
	proof "fixture built against dev.afterburn:afterburn-runtime:$VERSION from $repo (the jar is dist/$a.jar byte for byte)"
	# The class path (the fixture's jar, then the resolved dependencies) in a java @argfile.
	printf -- '-cp\n%s\n' "$d/fixture/target/fixture-1.jar:$cp" >"$d/classpath.args"
	local flags=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
	local run=("@$d/classpath.args" dev.afterburn.runtime.Main dev.afterburn.fixture.Fixture)
	# The class-data sharing archive java.mk makes: a handshake and a request in stdio mode.
	printf 'OPTIONS * HTTP/1.1\r\nHost: a\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\nPOST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi' |
		AFTERBURN_FDS=0,1 "$JAVA" "${flags[@]}" -XX:ArchiveClassesAtExit="$d/fixture.jsa" "${run[@]}" >/dev/null 2>"$d/jsa.log" ||
		echo "   (no class-data sharing archive: $(tail -1 "$d/jsa.log"))"
	suite java "$d" "$WATCHDOG" "$JAVA ${flags[*]} -Xshare:auto -XX:SharedArchiveFile=$d/fixture.jsa ${run[*]}"
}

# ---- run -----------------------------------------------------------------------------------
[ -x "$CONFORMANCE" ] || die "no conformance suite at $CONFORMANCE"
say "dist-test $VERSION: ${LANGS[*]} (scratch directory $WORK)"
(cd "$DIST" && sha256sum --quiet -c SHA256SUMS) || die "dist/SHA256SUMS does not match dist/"
proof "dist/SHA256SUMS matches"

for lang in "${LANGS[@]}"; do
	case "$lang" in go | python | node | java) ;; *) die "unknown language $lang (go python node java)" ;; esac
	say "$lang"
	start=$SECONDS
	# A step that breaks (an install, a build, a proof) fails this language and the run goes on.
	# (Not `if ( … )`: inside a condition, bash ignores set -e even in a subshell.)
	set +e
	(
		set -e
		# The counts of the suite runs made, also when a later step breaks.
		trap 'declare -p PASSED FAILS SKIPPED RUNS >"$WORK/$lang.counts"' EXIT
		"test_$lang"
	)
	rc=$?
	set -e
	[ ! -f "$WORK/$lang.counts" ] || eval "$(<"$WORK/$lang.counts")"
	if [ "$rc" = 0 ]; then
		STATUS[$lang]=ok
	else
		STATUS[$lang]="a step broke (above)"
		FAILS[$lang]=$((${FAILS[$lang]:-0} + 1))
	fi
	WALL[$lang]=$((SECONDS - start))
	echo "$lang: ${PASSED[$lang]:-0} passed, ${FAILS[$lang]:-0} failed, ${SKIPPED[$lang]:-0} skipped" \
		"(${RUNS[$lang]:-0} suite runs, ${WALL[$lang]} s)"
done

say "summary"
total_failed=0
for lang in "${LANGS[@]}"; do
	printf '%-7s %5d passed, %d failed, %d skipped  %d suite runs  %4d s  %s\n' "$lang" \
		"${PASSED[$lang]:-0}" "${FAILS[$lang]:-0}" "${SKIPPED[$lang]:-0}" "${RUNS[$lang]:-0}" "${WALL[$lang]}" "${STATUS[$lang]}"
	total_failed=$((total_failed + ${FAILS[$lang]:-0}))
done
if [ "$total_failed" -gt 0 ]; then
	FAILED=1
	exit 1
fi
