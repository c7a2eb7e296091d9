package dev.blocknode.docs;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The docs' rules fire: a page that breaks one is refused, naming the block. Without these, DocsCommandsUnitTest
 * passing would prove nothing: a marker must not be a way to skip.
 */
class DocRulesUnitTest {

    private static final DocRules RULES = new DocRules(Set.of("unit", "release")::contains,
            Set.of("VERSION", "TEST")::contains, path -> path.startsWith("deploy/helm/blocknode"));

    private static List<String> problems(String markdown) {
        return RULES.problems(List.of(DocPage.parse("page.md", markdown)));
    }

    private static void assertRefused(String markdown, String fragment) {
        List<String> problems = problems(markdown);
        assertTrue(problems.stream().anyMatch(p -> p.contains(fragment)), fragment + " not among " + problems);
    }

    @Test
    void aMarkedBlockWithAReasonPasses() {
        assertEquals(List.of(), problems("""
                <!-- example: needs a cluster and its registry -->
                ```sh
                kubectl get pods
                ```
                ```text
                NAME   READY
                ```
                """));
    }

    @Test
    void aBlockOfCommandsOrOfAFileWithoutAMarkerIsRefused() {
        assertRefused("```sh\nkubectl get pods\n```\n", "page.md:1: a sh block an operator runs or writes needs");
        assertRefused("```yaml\nkind: Pod\n```\n", "a yaml block");
        assertRefused("```\nkubectl get pods\n```\n", "page.md:1: a code block needs a language");
    }

    @Test
    void anExampleNeedsItsReasonAndACheckNeedsAKnownChecker() {
        assertRefused("<!-- example: cluster -->\n```sh\nkubectl get pods\n```\n", "needs its reason");
        assertRefused("<!-- checked: by hand -->\n```sh\nkubectl get pods\n```\n", "names no checker");
        assertRefused("<!-- checked: deploy-validate -->\n```sh\nkubectl get pods\n```\n", "takes [yaml] blocks");
        assertRefused("<!-- checked: kube -->\n```sh\nkubectl get pods\n```\n", "needs the tier's function");
        assertRefused("<!-- checked: helm-template -->\n```sh\nhelm template b deploy/helm/blocknode"
                + " --kube-version 1.33\nkubectl get pods\n```\n", "runs helm template commands only");
    }

    @Test
    void aMarkerOnlyMarksTheBlockRightAfterIt() {
        assertRefused("<!-- example: needs a cluster and its registry -->\n\n```sh\nkubectl get pods\n```\n",
                "marks nothing");
        assertRefused("<!-- example needs a cluster and its registry -->\n```sh\nls\n```\n", "a malformed marker");
    }

    @Test
    void outputMayNotHoldTheCommandsThePagesRun() {
        assertRefused("""
                <!-- example: needs a cluster and its registry -->
                ```sh
                kubectl get pods
                ```
                ```text
                blocknode status
                ```
                """, "a text block holds a command (blocknode status)");
    }

    @Test
    void commandsKeepToWhatThePagesTeach() {
        String example = "<!-- example: needs a cluster and its registry -->\n```sh\n%s\n```\n";
        assertRefused(example.formatted("helm template blocknode deploy/helm/blocknode -n kube-system"),
                "without --kube-version");
        assertEquals(List.of(), problems(example.formatted(
                "helm template blocknode deploy/helm/blocknode --kube-version 1.33.0")));
        assertRefused(example.formatted("helm upgrade --reset-then-reuse-values --set logLevel=fine"),
                "names its release and its chart");
        assertRefused(example.formatted("helm upgrade blocknode deploy/helm/blocknode -n kube-system --reuse-values"),
                "--reuse-values keeps the previous chart's defaults");
        assertRefused(example.formatted("make unitt"), "the Makefile has no target unitt");
        assertRefused(example.formatted("make release VERSION=1.2.3 IMAGE_REPO=x"), "IMAGE_REPO is read neither");
        assertRefused(example.formatted("kubectl apply -f deploy/kubernetes/exampels/a.yaml"),
                "deploy/kubernetes/exampels/a.yaml is not in the repository");
        assertRefused("With Helm, `helm upgrade --reuse-values\n  --set logLevel=fine` restarts nothing.\n",
                "page.md:1: `helm upgrade --reuse-values --set logLevel=fine`: helm upgrade names its release");
        assertEquals(List.of(), problems("Render it with `helm template` or `make unit`.\n"));
    }

    @Test
    void aPvBlockRunsOnlyWhatTheTestCanRunAndMustPrint(@TempDir Path dir) throws IOException {
        String page = """
                <!-- checked: pv-input luns.yaml -->
                ```yaml
                - name: scratch
                  size: 10Gi
                  devicePath: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4
                ```
                <!-- checked: pv -->
                ```sh
                blocknode pv luns.yaml > pvs.yaml
                .tools/bin/deploy-validate -pv pvs.yaml
                kubectl apply -f pvs.yaml
                ```
                <!-- checked: pv-output blocknode pv luns.yaml -->
                ```yaml
                  name: "scratch"
                spec:
                  capacity:
                    storage: "20Gi"
                ```
                """;
        PvBlocks runner = new PvBlocks(dir);
        runner.run(DocPage.parse("page.md", page).blocks().stream()
                .filter(b -> b.kind() == DocPage.Kind.CHECKED).toList());
        String all = String.join("\n", runner.problems());
        assertTrue(all.contains("`kubectl apply -f pvs.yaml`: not a command this test runs"), all);
        assertTrue(all.contains("page.md:14: not what `blocknode pv luns.yaml` prints now"), all);
        assertEquals(2, runner.problems().size(), all);
        assertTrue(runner.validated().get("pvs.yaml").contains("volumeHandle: \"scratch\""), runner.validated().toString());
    }

    @Test
    void aRefusedLunListIsAProblem(@TempDir Path dir) throws IOException {
        PvBlocks runner = new PvBlocks(dir);
        runner.run(DocPage.parse("page.md", "<!-- checked: pv-input luns.yaml -->\n```yaml\n- name: a\n  size: 1Gi\n"
                + "  iqn: not-an-iqn\n```\n").blocks());
        assertTrue(String.join("\n", runner.problems()).contains("blocknode pv exits 1 for the LUN list, not 0"),
                runner.problems().toString());
    }

    @Test
    void aKubeCheckedBlockMustBeWhatTheTierRuns() {
        KubeTier tier = KubeTier.ofFunctions(KubeTier.functionsOf("""
                install_release() {
                    helm_kc install blocknode "oci://$REGISTRY/blocknode/charts/blocknode" --version "$RELEASE_VERSION" \\
                        -n kube-system --plain-http >"$WORK/logs/helm.log" 2>&1 || kube_fail "no: $(tail -5 "$WORK/x")"
                    cat >"$WORK/containerd/certs.d/$REGISTRY/hosts.toml" <<EOT
                server = "http://$REGISTRY"
                [host."http://$REGISTRY"]
                  capabilities = ["pull", "resolve"]
                EOT
                }
                """));
        String doc = "<!-- checked: kube install_release -->\n```sh\n%s\n```\n";
        assertEquals(List.of(), tier.problems(block(doc.formatted(
                "helm install blocknode oci://REGISTRY/blocknode/charts/blocknode --version X.Y.Z -n kube-system"))));
        assertTrue(tier.problems(block(doc.formatted("helm install blocknode oci://REGISTRY/blocknode/charts/blocknode"
                + " --version X.Y.Z -n default"))).getFirst().contains("is not the start of a command install_release"));
        assertTrue(tier.problems(block("<!-- checked: kube no_such -->\n```sh\nls\n```\n")).getFirst()
                .contains("which no test-e2e/kube script defines"));
        String toml = "<!-- checked: kube install_release -->\n```toml\n%s\n```\n";
        assertEquals(List.of(), tier.problems(block(toml.formatted(
                "server = \"http://REGISTRY\"\n[host.\"http://REGISTRY\"]\n  capabilities = [\"pull\", \"resolve\"]"))));
        assertEquals(1, tier.problems(block(toml.formatted("server = \"https://REGISTRY\""))).size());
    }

    private static DocPage.Block block(String markdown) {
        return DocPage.parse("page.md", markdown).blocks().getFirst();
    }

    @Test
    void shellTextIsCutIntoTheCommandsAShellWouldRun() {
        ShellScript script = ShellScript.parse("""
                cat > luns.csv <<'CSV'
                name,size
                CSV
                for pod in $(kubectl get pods -o name); do   # each pod
                  kubectl exec "$pod" -c blocknode -- sh -c 'echo "$NODE_NAME"' | xargs
                done
                helm upgrade blocknode oci://R/c --version 1 \\
                  --set a=b && kubectl -n kube-system rollout status ds/blocknode-node
                """);
        assertEquals(List.of("cat > luns.csv <<CSV", "for pod in $(kubectl get pods -o name)",
                "kubectl exec $pod -c blocknode -- sh -c echo \"$NODE_NAME\"", "xargs",
                "helm upgrade blocknode oci://R/c --version 1 --set a=b",
                "kubectl -n kube-system rollout status ds/blocknode-node"),
                script.commands().stream().map(ShellScript.Command::text).toList());
        assertEquals("name,size\n", script.hereDocs().getFirst().body());
    }
}
