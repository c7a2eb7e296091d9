# blocknode: a newcomer needs `make unit` (seconds, no root), `make run` and `make test` (see CONTRIBUTING.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The newest JDK >= 21. The goals below run no Java of this machine's, or say themselves what they need (make image
# and make release: scripts/build-host.sh), so a machine without a JDK may still run them: make image-from-source
# builds one inside its builder stage, and make publish, make validate-deploy and the package targets need none.
NO_JDK_GOALS := help deps test-deps apt-test validate-deploy check-rules image image-host image-from-source \
  image-from-source-check release release-host release-check \
  publish test-images e2e-kube
JAVA_HOME := $(shell scripts/find-jdk.sh 2>/dev/null)
ifeq ($(JAVA_HOME),)
ifneq ($(filter-out $(NO_JDK_GOALS),$(or $(MAKECMDGOALS),$(.DEFAULT_GOAL))),)
$(shell scripts/find-jdk.sh >/dev/null)
$(error no JDK >= 21 found; see the message above)
endif
else
export JAVA_HOME
JDK_FEATURE := $(shell sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' $(JAVA_HOME)/release)
# JDK 24+ warns about sun.misc.Unsafe use inside Maven itself; silence it where the flag exists.
ifeq ($(shell test $(JDK_FEATURE) -ge 24 && echo yes),yes)
export MAVEN_OPTS += --sun-misc-unsafe-memory-access=allow
endif
endif
JAVA := $(JAVA_HOME)/bin/java
MVN := mvn -B -q

PLUGIN_JAR := java/target/blocknode.jar
E2E_JAR := test-e2e/target/blocknode-e2e.jar
# What the Maven build compiles (the bench, soak, VM and registration harnesses are not part of it).
SOURCES := $(shell find pom.xml proto native java test-e2e -path '*/target' -prune -o -path test-e2e/bench -prune \
             -o -path test-e2e/vm -prune -o -path test-e2e/registration -prune -o -path test-e2e/soak -prune -o -type f \( -name '*.java' \
             -o -name '*.c' -o -name '*.h' -o -name '*.proto' -o -name 'pom.xml' \) -print)

TOOLS := $(CURDIR)/.tools/bin
CSI_SANITY_VERSION := v5.6.0
CSI_SANITY := $(TOOLS)/csi-sanity-$(CSI_SANITY_VERSION)
PROMTOOL := $(TOOLS)/promtool

RUN_DIR := $(CURDIR)/run

# The upstream sidecars (node-driver-registrar, livenessprobe) the registration and liveness tests run:
# unpacked from ../shared/tools (beside the repository, in CI too) into .tools/bin and checked against the
# sha256 in test-e2e/sidecars/versions.txt; built from the Go module proxy only where that is absent.
SHARED_TOOLS ?= $(CURDIR)/../shared/tools
export SHARED_TOOLS

# The test tiers, in make test's order: one list for make help, make test and the docs' tables (scripts/tiers.tsv
# says its columns). make test builds the jars, then runs the tiers (scripts/test-tiers.sh): the unit and host tiers in
# one Maven test run (make maven-test) beside the VM tier.
TIERS := scripts/tiers.tsv

# One test class (or a Surefire pattern) for make unit or make host: make unit TEST=VolumePublisherUnitTest.
TEST ?=
SUREFIRE := -Dmaven.test.redirectTestOutputToFile=true $(if $(TEST),-Dtest='$(TEST)' -Dsurefire.failIfNoSpecifiedTests=false)

.PHONY: help
help:
	@echo "make unit    the fast tests (no root); make unit TEST=SomeUnitTest runs one class (CONTRIBUTING.md)"
	@echo "make run     build if needed, start the plugin on ./run/csi.sock with a loop-backed demo volume"
	@echo "make test    (root) install what the tests need, then the tiers marked * below in order (+: beside the * above it, in order)"
	@echo "make deps    (root) the Debian packages the build and the tests use, where a tool is missing"
	@echo "make test-deps  (root) make deps and what every tier of make test installs, up front (make test does it first)"
	@echo "make build   build the runnable jars"
	@echo "make clean   remove build output"
	@echo "make docs    rewrite the generated pages (docs/reference: flags, metrics, Helm values; the tier tables)"
	@echo
	@echo "The tiers ($(TIERS); what each skips and why: docs/design/testing.md):"
	@awk -F'\t' '!/^#/ { printf "%s make %-18s %-24s %s\n", ($$5 == "no" ? " " : $$5 == "beside" ? "+" : "*"), $$2, \
	  "(" ($$3 == "yes" ? "root, " : "") $$4 ")", $$6 }' $(TIERS)
	@echo
	@echo "make image   (root; a JDK 25) blocknode's container image, offline with buildah: .tools/images/blocknode.tar (deploy/image)"
	@echo "make image-from-source  (root) the same image built as docker/podman users build it, from deploy/Containerfile.source"
	@echo "make release VERSION=x.y.z  (root; a JDK 25 and Go, checked first: scripts/build-host.sh) into dist/: the image (OCI archive), its SBOM, the packaged chart, SHA256SUMS (deploy/release)"
	@echo "make publish REGISTRY=host[:port]  the release in dist/ into that registry: image (skopeo), chart (helm, OCI)"
	@echo "make test-images  (root) the sidecar, pause and busybox images the Kubernetes tier runs, beside it"
	@echo "make image-check  (root) both, imported into a throwaway containerd and run there"

# Host packages the plugin and its tests use. Installed only when a tool is missing, through scripts/apt.sh (as every
# apt-get here is: it waits for a dpkg lock another apt holds, and retries a failed package-list update).
.PHONY: deps
deps:
	@bash scripts/apt.sh ensure --recommends mkfs.ext4:e2fsprogs resize2fs:e2fsprogs mkfs.xfs:xfsprogs \
	  xfs_growfs:xfsprogs blkid:util-linux losetup:mount findmnt:util-linux cryptsetup:cryptsetup-bin mvn:maven \
	  go:golang-go xz:xz-utils

$(CSI_SANITY):
	@mkdir -p $(TOOLS)
	@echo "installing csi-sanity $(CSI_SANITY_VERSION) from the Go module proxy"
	GOBIN=$(TOOLS) GOFLAGS=-mod=mod go install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@$(CSI_SANITY_VERSION)
	mv $(TOOLS)/csi-sanity $@

.PHONY: build
build: $(PLUGIN_JAR)

$(PLUGIN_JAR) $(E2E_JAR): $(SOURCES)
	$(MVN) install -DskipTests
	@touch $(PLUGIN_JAR) $(E2E_JAR)

.PHONY: run
run: deps $(PLUGIN_JAR)
	@mkdir -p $(RUN_DIR)
	$(JAVA) --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -jar $(PLUGIN_JAR) \
	  --endpoint unix://$(RUN_DIR)/csi.sock \
	  --kubelet-root $(RUN_DIR)/kubelet \
	  --state-dir $(RUN_DIR)/state \
	  --metrics-address 127.0.0.1:9810 \
	  --log-format text \
	  --demo

# What every tier of make test needs from Debian and the Go module proxy, installed before its first tier: make deps,
# csi-sanity, promtool, then the VM tier's, the Kubernetes tier's and the image and release scripts' packages
# (scripts/test-deps.sh). Each tier's own script still installs what it lacks when it runs alone.
.PHONY: test-deps
test-deps: deps $(CSI_SANITY) $(PROMTOOL)
	@bash scripts/test-deps.sh

# scripts/apt.sh, through which every apt-get above and in the scripts runs: it waits for a held dpkg lock naming the
# holder, gives up after APT_LOCK_WAIT, retries a failed update, updates and retries a failed install; against real
# fcntl locks (python3's), on stand-in lock files and once on the real /var/lib/dpkg/lock-frontend (root).
.PHONY: apt-test
apt-test:
	@start=$$(date +%s); rc=0; \
	bash scripts/apt-test.sh || rc=$$?; \
	echo "make apt-test: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# First every tier's packages (make test-deps), so that the tiers' order never changes what one finds on the host.
# Then one Maven build of the jars (tests compiled, not run), and the tiers scripts/tiers.tsv marks "yes" in its order,
# and with each the tiers marked "beside" after it, one after another at the same time (scripts/test-tiers.sh): the VM
# tier, and beside it first the unit and host tiers in one Maven test run (make maven-test; host tests mount real loop
# devices: root only), then the host tier without a SAN initiator, scripts/apt.sh, the harnesses' compile, csi-sanity,
# the real sidecars (registration, liveness), deploy/, the release and Kubernetes. The first failure stops it (a tier
# beside the VM tier that fails stops the VM tier's guests too). Meanwhile, from the start, the kube tier's Kubernetes,
# containerd and previous-release builds run in the background at nice 10 (test-e2e/kube/prebuild.sh; the tier waits
# for them, then reuses them), and are stopped with make test if it ends before.
.PHONY: test
test: test-deps
	@start=$$(date +%s); mkdir -p .tools; \
	setsid nice -n 10 bash test-e2e/kube/prebuild.sh >.tools/prebuild.log 2>&1 & prebuild=$$!; \
	trap 'kill -TERM -- -'$$prebuild' 2>/dev/null; wait '$$prebuild' 2>/dev/null' EXIT; \
	echo "make test: building Kubernetes, containerd and the previous release for the kube tier in the background (.tools/prebuild.log)"; \
	$(MVN) -ntp install -DskipTests && touch $(PLUGIN_JAR) $(E2E_JAR) && \
	echo "make test: the jars are built ($$(( $$(date +%s) - start )) s)" && \
	MAKE="$(MAKE)" bash scripts/test-tiers.sh $(TIERS) && \
	echo "make test: all tiers passed in $$(( $$(date +%s) - start )) s"

# The unit and host tiers in one Maven test run, as make test runs them (beside the VM tier): one Surefire start per
# module for both. Maven is not quiet here, so Surefire's per-class lines and totals stay in the log. Root.
.PHONY: maven-test
maven-test: deps
	@[[ $$(id -u) == 0 ]] || { echo "make maven-test needs root (the host tier: loop devices, mkfs, mounts)"; exit 2; }; \
	start=$$(date +%s); rc=0; rm -rf native/target/surefire-reports java/target/surefire-reports test-e2e/target/surefire-reports; \
	mvn -B -ntp test $(SUREFIRE) || rc=$$?; \
	echo "make maven-test: $$( ((rc == 0)) && echo passed || echo FAILED ), $$(scripts/surefire-totals.sh) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# The unit tier: every test not tagged "host", in native/, java/ and test-e2e/, with no root and no jar installed.
# Quiet: a failure prints its assertion; each class's own output is in <module>/target/surefire-reports/.
.PHONY: unit
unit:
	@command -v mvn >/dev/null || { echo "make unit needs Maven: make deps (root) installs it, or apt-get install maven"; exit 2; }; \
	start=$$(date +%s); rc=0; rm -rf native/target/surefire-reports java/target/surefire-reports test-e2e/target/surefire-reports; \
	$(MVN) -ntp test -Dtest.excludedGroups=host $(SUREFIRE) || rc=$$?; \
	echo "make unit: $$( ((rc == 0)) && echo passed || echo FAILED ), $$(scripts/surefire-totals.sh) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# The host tier: the tests tagged "host" (JUnit's @Tag("host"), the *HostTest classes of native/, java/ and
# test-e2e/): real loop devices, filesystems and mounts, so root. Each test undoes what it made.
.PHONY: host
host: deps
	@[[ $$(id -u) == 0 ]] || { echo "make host needs root (loop devices, mkfs, mounts)"; exit 2; }; \
	start=$$(date +%s); rc=0; rm -rf native/target/surefire-reports java/target/surefire-reports test-e2e/target/surefire-reports; \
	$(MVN) -ntp test -Dgroups=host $(SUREFIRE) || rc=$$?; \
	echo "make host: $$( ((rc == 0)) && echo passed || echo FAILED ), $$(scripts/surefire-totals.sh) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# The host tier again, in namespaces where open-iscsi, multipath-tools and nvme-cli were never installed: their programs
# and /etc files whited out, no daemon's abstract socket in reach (scripts/without-san.sh). make test installs them
# first (make test-deps), so it runs the host tier once with them and once without: a test whose expectation rests
# on what the host happens to have installed fails one of the two.
.PHONY: host-without-san
host-without-san:
	@[[ $$(id -u) == 0 ]] || { echo "make host-without-san needs root (namespaces, loop devices, mounts)"; exit 2; }; \
	bash scripts/without-san.sh $(MAKE) --no-print-directory host

# csi-sanity against the plugin, mount and block, through the sanity front, with the test controller's loop-backed
# volumes (root); reports in test-e2e/target/sanity.
.PHONY: sanity-test
sanity-test: deps $(PLUGIN_JAR) $(E2E_JAR) $(CSI_SANITY)
	@start=$$(date +%s); rc=0; \
	CSI_SANITY=$(CSI_SANITY) JAVA=$(JAVA) bash test-e2e/sanity/run-sanity.sh $(PLUGIN_JAR) $(E2E_JAR) || rc=$$?; \
	echo "make sanity-test: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# The bench and soak harnesses are built by their own scripts, not by Maven: compile them here too, so that a
# change which breaks them fails make test instead of the next make bench. Figure g's Go client too: vet,
# build and its own test (an in-process fake driver; no root, a second); and figure i's gobrick harness, vet and
# build only (about 1 s; 4 s more the first time, fetching gobrick from the Go module proxy).
.PHONY: compile-harnesses
compile-harnesses: $(PLUGIN_JAR)
	@out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && \
	$(JAVA_HOME)/bin/javac --release 21 -Xlint:all,-processing -Werror -d "$$out" -cp $(PLUGIN_JAR) \
	  $$(find test-e2e/bench/src test-e2e/soak/src -name '*.java') $$(grep -v '^#' test-e2e/bench/fakes.list) && \
	(cd test-e2e/bench/kubeletclient && go vet ./... && go build -o "$$out/kubeletclient" . && go test -count=1 ./...) && \
	(cd test-e2e/bench/gobrick-attach && go vet ./... && go build -o "$$out/gobrick-attach" .) && \
	echo "harnesses: the bench and soak sources (figures k's and l's with the fakes of test-e2e/bench/fakes.list) compile against $(PLUGIN_JAR); figure g's Go client builds and passes its test; figure i's gobrick harness builds"

.PHONY: clean
clean:
	$(MVN) clean
	rm -rf $(RUN_DIR)

# The SAN tier: this machine's kernel has no SCSI, iSCSI or device-mapper, so a qemu guest with Debian's
# kernel runs tgtd + open-iscsi + multipathd and the plugin's jar (see test-e2e/vm/README.md).
.PHONY: e2e-vm
e2e-vm: $(PLUGIN_JAR) $(E2E_JAR) $(CSI_SANITY)
	@start=$$(date +%s); rc=0; \
	bash test-e2e/vm/setup.sh && bash test-e2e/vm/e2e.sh || rc=$$?; \
	echo "make e2e-vm: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# Kubernetes for real: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet (built from the Go
# module proxy into the machine-wide cache, scripts/cache.sh), containerd + runc (built likewise), a release (make
# release) published into a registry on loopback (make publish) and installed from it with helm, then redeployed
# from deploy/'s manifests, with the real sidecars; scenarios in test-e2e/kube/scenarios. See test-e2e/kube/README.md.
.PHONY: e2e-kube
e2e-kube:
	@start=$$(date +%s); rc=0; \
	bash test-e2e/kube/run.sh || rc=$$?; \
	echo "make e2e-kube: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# deploy/: every manifest and the Helm chart's rendering decoded strictly into k8s.io/api types, blocknode's
# own rules, chart-vs-manifest drift, and the validator's negative tests. Go modules from the module proxy
# (pinned in deploy/validate/go.sum); no cluster, no docker. The alert rules first (check-rules).
.PHONY: validate-deploy
validate-deploy: check-rules
	cd deploy/validate && go test ./... && go build -o $(TOOLS)/deploy-validate .
	$(TOOLS)/deploy-validate -deploy deploy

# deploy/monitoring's alert rules: promtool's own check, then the rules' unit tests (deploy/monitoring/tests: each
# alert fires when it should and not otherwise); and the dashboard's queries, given to promtool as recording rules
# by the validator, so that each one must parse. Which series both name is checked by deploy/validate's go test.
.PHONY: check-rules
check-rules: $(PROMTOOL)
	$(PROMTOOL) check rules deploy/monitoring/rules.yaml
	$(PROMTOOL) test rules deploy/monitoring/tests/*.yaml
	@queries=$$(mktemp --suffix=.yaml) && trap 'rm -f "$$queries"' EXIT && \
	(cd deploy/validate && go run . -dashboard-rules ../monitoring/dashboard.json) >"$$queries" && \
	$(PROMTOOL) check rules "$$queries" >/dev/null && echo "dashboard.json: every query parses (promtool)"

# promtool from Debian's prometheus package, downloaded and unpacked into .tools/bin, not installed: installing
# it would start a Prometheus server (its init script) and bring a web UI's libraries and node-exporter along.
$(PROMTOOL):
	@mkdir -p $(TOOLS)
	@echo "unpacking promtool from Debian's prometheus package into $(TOOLS) (the package is not installed)"
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cd "$$tmp" && \
	bash $(CURDIR)/scripts/apt.sh download prometheus && \
	dpkg-deb --fsys-tarfile prometheus_*.deb | tar -xO ./usr/bin/promtool >"$@.tmp" && \
	chmod 755 "$@.tmp" && mv "$@.tmp" "$@" && "$@" --version | head -n1

# The generated reference pages: docs/reference/flags.md (from FlagParser.FLAGS), metrics.md (from a scrape of
# the real plugin: a host test, root) and helm-values.md (from the chart's values.yaml and schema); and the tier
# tables in README.md and CONTRIBUTING.md (from scripts/tiers.tsv); deploy/validate/keyformats.json (the volume_context
# value formats the validator shares with the plugin, from transport.KeyFormats); deploy/validate/testdata/doc-pvs (the PVs
# the docs' own blocknode pv commands print, which deploy/validate checks). The same tests, without BLOCKNODE_WRITE_DOCS,
# fail in make test when a page is stale (Maven's unit and host tiers, deploy/validate's go test).
.PHONY: docs
docs:
	BLOCKNODE_WRITE_DOCS=1 $(MVN) -ntp -pl java -am test \
	  -Dtest='FlagsReferenceUnitTest,TiersListUnitTest,KeyFormatsUnitTest,DocsCommandsUnitTest,MetricsReferenceHostTest' -Dsurefire.failIfNoSpecifiedTests=false
	cd deploy/validate && BLOCKNODE_WRITE_DOCS=1 go test -count=1 -run TestValuesDocIsCurrent .
	@echo "docs: docs/reference/flags.md, metrics.md, helm-values.md, the tier tables, deploy/validate/keyformats.json and testdata/doc-pvs rewritten; review and commit them"

# Container images (deploy/README.md, "Build the image"): Debian base by mmdebstrap, Java runtime by jlink, the
# image by buildah from deploy/Containerfile, each written as an OCI archive under .tools/images/ for
# `ctr images import`. Not part of make test: the Kubernetes tier builds and imports them itself.
.PHONY: image
image: image-host $(PLUGIN_JAR)
	bash deploy/image/build.sh $(PLUGIN_JAR)

# What make image and make release need of this machine, checked before anything is built or installed: a JDK 25
# (the image's runtime is jlinked from it), and for a release Go as deploy/validate/go.mod asks. Without them
# scripts/build-host.sh says what to install and where from, and points at make image-from-source, which needs
# neither: make release does not switch to it by itself, since that image is another one (Debian 13's tools, not
# the tested Debian 12 ones) and a release's SBOM and chart still need Go (docs/install.md, "What a build host needs").
.PHONY: image-host release-host
image-host release-host:
	@bash scripts/build-host.sh $(@:-host=)

# The image as a user without a Debian host builds it (docker/podman build -f deploy/Containerfile.source .): jar,
# JNI library and Java runtime made inside a Debian trixie builder stage, from a copy of the checkout's tracked
# files; here with buildah, from a Debian root bootstrapped by mmdebstrap, into .tools/images/blocknode-source.tar.
# Needs deb.debian.org and Maven Central. deploy/validate's test checks the file against deploy/Containerfile and
# base.sh. VERSION sets the jar's and the image's version.
.PHONY: image-from-source
image-from-source:
	bash deploy/image/build-from-source.sh $(if $(VERSION),--version $(VERSION))

# make test's proof of that route (deploy/image/source-check.sh): the image built from deploy/Containerfile.source
# serves as the operator's command line as the release's does (deploy/release/cli-check.sh).
.PHONY: image-from-source-check
image-from-source-check:
	@start=$$(date +%s); rc=0; \
	bash deploy/image/source-check.sh || rc=$$?; \
	echo "make image-from-source-check: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# A release (deploy/release/release.sh, docs/install.md): the jar built at VERSION (Maven's -Drevision, in a copy
# of the working tree, which stays as it is), the image from it with OCI labels, its CycloneDX SBOM, the chart
# packaged and linted with the image pinned by tag and digest, SHA256SUMS; into dist/. VERSION must be semver.
# IMAGE_REPOSITORY (default: the chart's image.repository) names the image.
.PHONY: release
release: release-host deps
	@[[ -n "$(VERSION)" ]] || { echo "usage: make release VERSION=x.y.z"; exit 2; }
	@start=$$(date +%s); rc=0; \
	bash deploy/release/release.sh "$(VERSION)" || rc=$$?; \
	echo "make release: $$( ((rc == 0)) && echo "dist/ written" || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# A release's image and chart pushed into REGISTRY (deploy/release/publish.sh, docs/operations.md "Publish a
# release"): the image by skopeo (its digest kept, the chart's), the chart by helm as an OCI artifact under
# REGISTRY/<the image's namespace>/charts. REGISTRY must be the registry the release's chart names its image in.
# Credentials: skopeo's and helm's own auth files (REGISTRY_AUTH_FILE for both). DIST defaults to dist/. A version
# the registry already holds as another build is refused unless FORCE=1.
.PHONY: publish
publish:
	@[[ -n "$(REGISTRY)" ]] || { echo "usage: make publish REGISTRY=host[:port] [DIST=dir] [FORCE=1]"; exit 2; }
	FORCE="$(FORCE)" bash deploy/release/publish.sh "$(REGISTRY)" $(DIST)

# make test's proof of make release: a release at 0.0.0-check into .tools/release/check-dist, then sha256sum -c and
# deploy/validate -check-release (one version everywhere, labels, SBOM against dpkg status and Maven's dependency
# list, chart lint and rendering); non-semver VERSIONs refused; the working tree unchanged.
.PHONY: release-check
release-check: deps
	@start=$$(date +%s); rc=0; \
	bash deploy/release/check.sh || rc=$$?; \
	echo "make release-check: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

.PHONY: test-images
test-images:
	bash deploy/image/test-images.sh

.PHONY: image-check
image-check: image test-images
	bash deploy/image/check.sh

# Kubelet's registration path: the plugin, node-driver-registrar (from ../shared/tools, sha256-checked, into
# .tools/bin; or REGISTRAR=/path/to/binary; REGISTRAR=standin runs the harness's stand-in, a self-test of
# the harness only), and a Go harness playing kubelet's plugin watcher. See test-e2e/registration/README.md.
# First the unit tests of test-e2e/harness, the process helpers this harness and the liveness one share.
.PHONY: registration-test
registration-test: $(PLUGIN_JAR)
	@start=$$(date +%s); rc=0; \
	(cd test-e2e/harness && go test ./...) || rc=$$?; \
	((rc != 0)) || JAVA=$(JAVA) bash test-e2e/registration/run.sh $(PLUGIN_JAR) || rc=$$?; \
	echo "make registration-test: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# The plugin's health as kubelet sees it: the plugin beside livenessprobe (from ../shared/tools, sha256-checked;
# or LIVENESSPROBE=/path/to/binary), run with the DaemonSet's --probe-timeout; /healthz while the plugin is
# healthy, killed, not ready (a host tool hidden in a mount namespace: root) and back. LIVENESS_LOAD=30s also
# times /healthz with every core busy. See test-e2e/liveness/README.md.
.PHONY: liveness-test
liveness-test: deps $(PLUGIN_JAR)
	@start=$$(date +%s); rc=0; \
	JAVA=$(JAVA) bash test-e2e/liveness/run.sh $(PLUGIN_JAR) || rc=$$?; \
	echo "make liveness-test: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# Benchmark figures (test-e2e/bench/README.md): every figure a ratio to a baseline measured in the same run;
# the table is printed and written to test-e2e/target/bench/results.md. Root: loop devices and mounts.
.PHONY: bench
bench: $(PLUGIN_JAR)
	@start=$$(date +%s); rc=0; \
	bash test-e2e/bench/bench.sh $(PLUGIN_JAR) || rc=$$?; \
	echo "make bench: $$( ((rc == 0)) && echo finished || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# Figure h (test-e2e/bench/README.md, "Figure h"): N iSCSI LUNs x 2 paths staged, published, swept,
# unpublished and drained all at once in a qemu guest, beside the guest's target alone; SAN_N="25 50 100 200".
# Figure i, in the same boot: the same attach and detach by blocknode and by Dell's gobrick (its harness built
# from the Go module proxy), SAN_PEER_N="8" LUNs, SAN_PEER_ROUNDS=3 rounds; SAN_N= (empty) runs figure i alone.
# Its own target: not part of make test (whose iscsi boot runs figure h with N = 4 as a smoke run). Root.
.PHONY: bench-san
bench-san: $(PLUGIN_JAR)
	@start=$$(date +%s); rc=0; \
	bash test-e2e/vm/setup.sh && bash test-e2e/bench/san-bench.sh || rc=$$?; \
	echo "make bench-san: $$( ((rc == 0)) && echo finished || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# Soak (test-e2e/soak/README.md): SOAK_CYCLES lifecycle cycles of ext4, xfs and block loop volumes with seeded
# random interleaving; fails when a call fails or the plugin's fds, threads or RSS grow past the tolerances.
.PHONY: soak
soak: $(PLUGIN_JAR)
	@start=$$(date +%s); rc=0; \
	bash test-e2e/soak/soak.sh $(PLUGIN_JAR) || rc=$$?; \
	echo "make soak: $$( ((rc == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc
