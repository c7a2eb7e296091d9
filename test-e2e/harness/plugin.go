package harness

import "path/filepath"

// Plugin is blocknode on the host as the DaemonSet's blocknode container runs it, with its kubelet root and
// state directory under the run's work directory.
type Plugin struct {
	Java, Jar string
	Socket    string // the CSI socket it listens on
	NodeID    string
	WorkDir   string
}

// Dirs are the directories the plugin needs to find made.
func (p Plugin) Dirs() []string {
	return []string{p.kubeletRoot(), p.stateDir()}
}

// Argv is its command line: the container's JVM flags, then the plugin's.
func (p Plugin) Argv() []string {
	return []string{p.Java, "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-jar", p.Jar,
		"--endpoint", "unix://" + p.Socket,
		"--node-id", p.NodeID,
		"--kubelet-root", p.kubeletRoot(),
		"--state-dir", p.stateDir(),
		"--log-format", "text"}
}

func (p Plugin) kubeletRoot() string { return filepath.Join(p.WorkDir, "kubelet") }

func (p Plugin) stateDir() string { return filepath.Join(p.WorkDir, "state") }
