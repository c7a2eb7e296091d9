package main

import (
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The controller side: a Deployment running blocknode --mode=controller beside the upstream external-attacher
// (deploy/kubernetes/controller.yaml), and the attacher's RBAC (controller-rbac.yaml).

const attacherImage = "csi-attacher"

// isController says whether a Deployment runs blocknode's controller side.
func isController(d *appsv1.Deployment) bool {
	c := findContainer(d.Spec.Template.Spec.Containers, pluginContainer)
	return c != nil && flagsOf(c.Args).get("mode", "node") == "controller"
}

// attacherRules are what the external-attacher does in the API (upstream's RBAC for it): watch
// VolumeAttachments and mark them, read the PV each names, map node names to node IDs through CSINode.
var attacherRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"csinodes"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"volumeattachments"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"volumeattachments/status"}, Verbs: []string{"patch"}},
}

// leaseRules are what --leader-election does with its Lease, in the attacher's namespace.
var leaseRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "watch", "list", "delete", "update", "create"}},
}

func checkController(o *Object, d *appsv1.Deployment, s *objectSet) {
	spec := &d.Spec.Template.Spec
	plugin := findContainer(spec.Containers, pluginContainer)
	f := flagsOf(plugin.Args)
	if driver := f.get("driver-name", defaultDriverName); driver != s.driverName() {
		o.fail("--driver-name %q is not the deployed driver %q", driver, s.driverName())
	}
	if lf := f.get("log-format", "json"); lf != "json" {
		o.fail("--log-format must be json in a deployment, got %q", lf)
	}
	checkGrace(o, f, spec)

	// It touches no host: nothing that would give it the host's powers.
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		o.fail("the controller side needs no host namespace (hostNetwork, hostPID, hostIPC must be false)")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			o.fail("volume %s is a hostPath: the controller side touches no host", v.Name)
		}
	}
	for _, c := range spec.Containers {
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			o.fail("container %s is privileged: the controller side touches no host", c.Name)
		}
	}

	attacher := findByImage(spec.Containers, attacherImage)
	if attacher == nil {
		o.fail("no external-attacher container (image .../%s): nothing would call ControllerPublishVolume", attacherImage)
		return
	}
	socket := socketPath(f.get("endpoint", defaultEndpoint))
	address := socketPath(flagsOf(attacher.Args).get("csi-address", "/run/csi/socket"))
	if path.Base(address) != path.Base(socket) || !sameVolumeAt(plugin, attacher, path.Dir(socket), path.Dir(address)) {
		o.fail("%s: --csi-address %s is not the plugin's socket %s (one volume mounted in both)", attacher.Name, address, socket)
	}
	leaderElection := flagsOf(attacher.Args).get("leader-election", "false") == "true"
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	if replicas > 1 && !leaderElection {
		o.fail("replicas %d without the attacher's --leader-election: every replica would act on every attachment", replicas)
	}

	sa := spec.ServiceAccountName
	account := s.get("ServiceAccount", o.Namespace, sa)
	switch {
	case sa == "":
		o.fail("serviceAccountName is not set (the namespace's default account would be used)")
	case account == nil:
		o.fail("serviceAccountName %q: no such ServiceAccount in namespace %q in this set", sa, o.Namespace)
	case tokenNotMounted(spec, account.Value.(*corev1.ServiceAccount)):
		o.fail("the external-attacher needs its API token: automountServiceAccountToken must not be false")
	}
	if sa != "" {
		for _, missing := range ungranted(s.clusterRulesFor(o.Namespace, sa), attacherRules) {
			o.fail("ServiceAccount %s may not %s (the external-attacher needs it; see controller-rbac.yaml)", sa, missing)
		}
		if leaderElection {
			for _, missing := range ungranted(s.namespaceRulesFor(o.Namespace, sa), leaseRules) {
				o.fail("ServiceAccount %s may not %s in %s (--leader-election needs it)", sa, missing, o.Namespace)
			}
		}
	}
}

// sameVolumeAt says whether a's mount at dirA and b's mount at dirB are the same pod volume.
func sameVolumeAt(a, b *corev1.Container, dirA, dirB string) bool {
	volume := func(c *corev1.Container, dir string) string {
		for _, m := range c.VolumeMounts {
			if path.Clean(m.MountPath) == path.Clean(dir) {
				return m.Name
			}
		}
		return ""
	}
	v := volume(a, dirA)
	return v != "" && v == volume(b, dirB)
}

func tokenNotMounted(spec *corev1.PodSpec, sa *corev1.ServiceAccount) bool {
	if spec.AutomountServiceAccountToken != nil {
		return !*spec.AutomountServiceAccountToken
	}
	return sa.AutomountServiceAccountToken != nil && !*sa.AutomountServiceAccountToken
}

// clusterRulesFor are the rules of every ClusterRole bound to the account by a ClusterRoleBinding.
func (s *objectSet) clusterRulesFor(namespace, account string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, b := range s.clusterRoleBindings {
		if bindsAccount(b.Subjects, namespace, account) && b.RoleRef.Kind == "ClusterRole" {
			if r := s.get("ClusterRole", "", b.RoleRef.Name); r != nil {
				rules = append(rules, r.Value.(*rbacv1.ClusterRole).Rules...)
			}
		}
	}
	return rules
}

// namespaceRulesFor are the rules of every Role of the namespace bound to the account by a RoleBinding there.
func (s *objectSet) namespaceRulesFor(namespace, account string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, b := range s.roleBindings {
		if b.Namespace != namespace || !bindsAccount(b.Subjects, namespace, account) {
			continue
		}
		switch b.RoleRef.Kind {
		case "Role":
			if r := s.get("Role", namespace, b.RoleRef.Name); r != nil {
				rules = append(rules, r.Value.(*rbacv1.Role).Rules...)
			}
		case "ClusterRole":
			if r := s.get("ClusterRole", "", b.RoleRef.Name); r != nil {
				rules = append(rules, r.Value.(*rbacv1.ClusterRole).Rules...)
			}
		}
	}
	return rules
}

func bindsAccount(subjects []rbacv1.Subject, namespace, account string) bool {
	for _, sub := range subjects {
		if sub.Kind == rbacv1.ServiceAccountKind && sub.Name == account && sub.Namespace == namespace {
			return true
		}
	}
	return false
}

// ungranted lists "verb group/resource" for every permission in want that no rule in have grants.
func ungranted(have, want []rbacv1.PolicyRule) []string {
	var missing []string
	for _, w := range want {
		for _, group := range w.APIGroups {
			for _, resource := range w.Resources {
				for _, verb := range w.Verbs {
					if !grants(have, group, resource, verb) {
						missing = append(missing, verb+" "+qualified(group, resource))
					}
				}
			}
		}
	}
	return missing
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if contains(r.APIGroups, group) && contains(r.Resources, resource) && contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s || item == "*" {
			return true
		}
	}
	return false
}

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// checkRules keeps a Role or ClusterRole of the deployment to named grants: no wildcard, and no secrets
// (blocknode's controller side needs no publish secrets, so the attacher is given no way to read one).
func checkRules(o *Object, rules []rbacv1.PolicyRule) {
	for _, r := range rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
			for _, item := range list {
				if item == "*" {
					o.fail("a wildcard grant (%q in %v): name the groups, resources and verbs", item, list)
				}
			}
		}
		for _, resource := range r.Resources {
			if resource == "secrets" {
				o.fail("grants access to secrets, which nothing of blocknode's deployment reads")
			}
		}
		if len(r.NonResourceURLs) > 0 {
			o.fail("grants non-resource URLs %v, which nothing of blocknode's deployment calls", r.NonResourceURLs)
		}
	}
}

// checkBinding fails a binding of a role of the deployment to anyone but a ServiceAccount of the set.
func checkBinding(o *Object, subjects []rbacv1.Subject, s *objectSet) {
	if len(subjects) == 0 {
		o.fail("binds no subject")
	}
	for _, sub := range subjects {
		if sub.Kind != rbacv1.ServiceAccountKind || s.get("ServiceAccount", sub.Namespace, sub.Name) == nil {
			o.fail("binds %s %s/%s, which is not a ServiceAccount of this set", sub.Kind, sub.Namespace, sub.Name)
		}
	}
}
