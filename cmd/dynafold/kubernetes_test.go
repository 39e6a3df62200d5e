package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dynafold/dynafold/internal/docexamples"
	"github.com/dynafold/dynafold/mapping"
)

const kubeDir = repoRoot + "/deploy/kubernetes"

// kubeManifests are deploy/kubernetes's manifests, decoded strictly (an
// unknown or duplicate field fails) into the API's own types.
type kubeManifests struct {
	deployment    *appsv1.Deployment
	service       *corev1.Service
	configMap     *corev1.ConfigMap
	networkPolicy *networkingv1.NetworkPolicy
}

func loadKubeManifests(t *testing.T) kubeManifests {
	t.Helper()
	var kust struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	data, err := os.ReadFile(filepath.Join(kubeDir, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, &kust), "kustomization.yaml")
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	require.NoError(t, err)
	var want []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			want = append(want, filepath.Base(f))
		}
	}
	require.ElementsMatch(t, want, kust.Resources, "kustomization.yaml lists every manifest of deploy/kubernetes")

	var m kubeManifests
	for _, name := range kust.Resources {
		data, err := os.ReadFile(filepath.Join(kubeDir, name))
		require.NoError(t, err)
		var tm metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(data, &tm), name)
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			m.deployment = &appsv1.Deployment{}
			obj = m.deployment
		case "v1 Service":
			m.service = &corev1.Service{}
			obj = m.service
		case "v1 ConfigMap":
			m.configMap = &corev1.ConfigMap{}
			obj = m.configMap
		case "networking.k8s.io/v1 NetworkPolicy":
			m.networkPolicy = &networkingv1.NetworkPolicy{}
			obj = m.networkPolicy
		default:
			t.Fatalf("%s: a %s %s, which this test does not check: add it here", name, tm.APIVersion, tm.Kind)
		}
		require.NoError(t, yaml.UnmarshalStrict(data, obj), "%s does not decode strictly into %s %s", name, tm.APIVersion, tm.Kind)
	}
	require.NotNil(t, m.deployment, "a Deployment")
	require.NotNil(t, m.service, "a Service for the metrics")
	require.NotNil(t, m.configMap, "a ConfigMap for the mapping")
	require.NotNil(t, m.networkPolicy, "a NetworkPolicy for the sync pods")
	return m
}

// TestKubernetesManifests holds deploy/kubernetes to what sync does: the
// arguments parse against sync's real flags, the probes reach /readyz and
// /healthz on the port --metrics-addr listens on, the grace period covers
// sync's shutdown, the mapping in the ConfigMap loads, and the DSN and AWS
// credentials come from Secrets. And to how it should be run: pinned by
// digest, no service-account token, non-root with no privilege to gain or
// capability to use, within limits, and reachable on the metrics port only
// from the monitoring namespace (checkKubeNetworkPolicy).
func TestKubernetesManifests(t *testing.T) {
	m := loadKubeManifests(t)
	d := m.deployment
	require.NotNil(t, d.Spec.Replicas)
	require.EqualValues(t, 2, *d.Spec.Replicas, "one streaming, one standing by")
	// A standby is never ready, so a rolling update could replace the
	// streaming pod only by going under its available count, and waits
	// for ever; Recreate stops both (the holder releases the lease on
	// SIGTERM) and starts two, one of which takes the lease at once.
	require.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type, "the Deployment's strategy")
	pod := d.Spec.Template.Spec
	require.Equal(t, d.Spec.Selector.MatchLabels, subset(d.Spec.Template.Labels, d.Spec.Selector.MatchLabels), "the selector matches the pod's labels")
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.NotEmpty(t, c.Image)
	// A tag can be moved to another image; a digest cannot.
	require.Regexp(t, `@sha256:[0-9a-f]{64}$`, c.Image, "the image is pinned by digest")
	// dynafold never calls the Kubernetes API.
	require.NotNil(t, pod.AutomountServiceAccountToken, "automountServiceAccountToken")
	require.False(t, *pod.AutomountServiceAccountToken, "no service-account token in the pod")
	require.Empty(t, c.Command, "the image's entrypoint is /dynafold; args are the command line")
	require.NotEmpty(t, c.Args)
	require.Equal(t, "sync", c.Args[0])

	// The arguments, against sync's real flags.
	a := &app{v: viper.New(), stdout: io.Discard, stderr: io.Discard, console: newConsole(io.Discard, nil)}
	root := a.rootCommand()
	var args []string
	flags := map[string]string{}
	for _, arg := range c.Args {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if strings.HasPrefix(arg, "--") {
			require.True(t, hasValue, "%s: write flags as --name=value in the manifest", arg)
			flags[name] = value
		}
		args = append(args, arg)
	}
	cmd, err := docexamples.Parse(root, args)
	require.NoError(t, err, "deployment.yaml's args: dynafold %s", strings.Join(c.Args, " "))
	require.Equal(t, "dynafold sync", cmd.CommandPath())
	require.True(t, strings.HasPrefix(flags["state"], "dynamodb://"), "--state names the DynamoDB state table: %q", flags["state"])

	// The mapping: mounted from the ConfigMap where --config reads it, and loadable.
	config := flags["config"]
	require.NotEmpty(t, config, "--config")
	mountedFrom := ""
	for _, vm := range c.VolumeMounts {
		if strings.HasPrefix(config, vm.MountPath+"/") {
			for _, v := range pod.Volumes {
				if v.Name == vm.Name && v.ConfigMap != nil {
					mountedFrom = v.ConfigMap.Name
				}
			}
		}
	}
	require.Equal(t, m.configMap.Name, mountedFrom, "--config %s is in the mapping's ConfigMap", config)
	text, ok := m.configMap.Data[filepath.Base(config)]
	require.True(t, ok, "the ConfigMap has %s", filepath.Base(config))
	cfg, err := mapping.Parse([]byte(text))
	require.NoError(t, err, "the ConfigMap's mapping")
	require.NoError(t, mapping.Validate(cfg, mapping.Options{}), "the ConfigMap's mapping")

	// Ports and probes: --metrics-addr, the container port, the probes and the Service agree.
	_, port, err := net.SplitHostPort(flags["metrics-addr"])
	require.NoError(t, err, "--metrics-addr")
	require.Len(t, c.Ports, 1)
	require.Equal(t, port, strconv.Itoa(int(c.Ports[0].ContainerPort)), "the container port is --metrics-addr's")
	portName := c.Ports[0].Name
	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.HTTPGet)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, portName, c.ReadinessProbe.HTTPGet.Port.String())
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.LivenessProbe.HTTPGet)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, portName, c.LivenessProbe.HTTPGet.Port.String())
	require.GreaterOrEqual(t, c.LivenessProbe.PeriodSeconds*c.LivenessProbe.FailureThreshold, int32(60),
		"liveness is for a stalled loop (/healthz fails after --stall-timeout), not a blip")
	s := m.service
	require.Equal(t, s.Spec.Selector, subset(d.Spec.Template.Labels, s.Spec.Selector), "the Service selects the sync pods")
	require.Len(t, s.Spec.Ports, 1)
	require.Equal(t, portName, s.Spec.Ports[0].TargetPort.String())

	// The grace period covers sync's shutdown: --grace for the round in
	// flight, then confirming (each step bounded by 10 s) and saving.
	grace := 5 * time.Second
	if g, ok := flags["grace"]; ok {
		grace, err = time.ParseDuration(g)
		require.NoError(t, err)
	}
	require.NotNil(t, pod.TerminationGracePeriodSeconds)
	require.GreaterOrEqual(t, time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second, grace+25*time.Second,
		"terminationGracePeriodSeconds is at least --grace plus 25 s")

	// Secrets, not literals, for the DSN and AWS credentials.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, name := range []string{"DYNAFOLD_SOURCE_DSN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		e, ok := env[name]
		require.True(t, ok, "the container sets %s", name)
		require.Empty(t, e.Value, "%s is not written in the manifest", name)
		require.NotNil(t, e.ValueFrom, name)
		require.NotNil(t, e.ValueFrom.SecretKeyRef, "%s comes from a Secret", name)
	}

	// Non-root, read-only root filesystem; the working directory writable.
	require.NotNil(t, pod.SecurityContext)
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.NotNil(t, c.SecurityContext)
	require.NotNil(t, c.SecurityContext.ReadOnlyRootFilesystem)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	workdir := dockerfile(t).workdir
	writable := false
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == workdir && !vm.ReadOnly {
			writable = true
		}
	}
	require.True(t, writable, "the image's working directory %s, where sync keeps its local files, is a writable volume", workdir)

	// No privilege to gain, no capability, the runtime's seccomp profile.
	sc := c.SecurityContext
	require.True(t, sc.Privileged == nil || !*sc.Privileged, "not privileged")
	require.True(t, sc.RunAsNonRoot == nil || *sc.RunAsNonRoot, "the container does not undo the pod's runAsNonRoot")
	require.NotNil(t, sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation")
	require.False(t, *sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation")
	require.NotNil(t, sc.Capabilities, "capabilities")
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, "every capability dropped")
	require.Empty(t, sc.Capabilities.Add, "no capability added")
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	require.NotNil(t, seccomp, "a seccomp profile, on the container or the pod")
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, seccomp.Type)

	// Requests to be scheduled by, a memory limit to be held to.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := c.Resources.Requests[r]
		require.True(t, ok && !q.IsZero(), "a %s request", r)
	}
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	require.True(t, ok && !limit.IsZero(), "a memory limit")
	require.GreaterOrEqual(t, limit.Cmp(c.Resources.Requests[corev1.ResourceMemory]), 0, "the memory limit is at least the request")

	// Every emptyDir is bounded: the node's disk is shared.
	emptyDirs := 0
	for _, v := range pod.Volumes {
		if v.EmptyDir != nil {
			emptyDirs++
			require.NotNil(t, v.EmptyDir.SizeLimit, "volume %s: an emptyDir has a sizeLimit", v.Name)
			require.False(t, v.EmptyDir.SizeLimit.IsZero(), "volume %s: sizeLimit", v.Name)
		}
	}
	require.Positive(t, emptyDirs, "the working directory and /tmp are emptyDirs")

	t.Run("NetworkPolicy", func(t *testing.T) { checkKubeNetworkPolicy(t, m) })
}

// checkKubeNetworkPolicy: the NetworkPolicy selects the sync pods, lets
// in only the metrics port and only from selected peers (a namespace and
// its pods, not every source), and lets out DNS, HTTPS and the source.
func checkKubeNetworkPolicy(t *testing.T, m kubeManifests) {
	d, np := m.deployment, m.networkPolicy
	c := d.Spec.Template.Spec.Containers[0]
	require.Len(t, c.Ports, 1)
	metricsName, metricsPort := c.Ports[0].Name, strconv.Itoa(int(c.Ports[0].ContainerPort))

	sel := np.Spec.PodSelector.MatchLabels
	require.NotEmpty(t, sel, "the policy selects pods by label, not every pod of the namespace")
	require.Equal(t, sel, subset(d.Spec.Template.Labels, sel), "the policy selects the sync pods")
	require.ElementsMatch(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes)

	require.NotEmpty(t, np.Spec.Ingress, "some ingress (the metrics scrape)")
	for i, rule := range np.Spec.Ingress {
		require.NotEmpty(t, rule.From, "ingress rule %d names its sources (without from: every source)", i)
		for _, peer := range rule.From {
			require.Nil(t, peer.IPBlock, "ingress rule %d: by namespace and pod, not address", i)
			require.NotNil(t, peer.NamespaceSelector, "ingress rule %d: from a named namespace", i)
			require.NotEmpty(t, peer.NamespaceSelector.MatchLabels, "ingress rule %d: an empty namespaceSelector is every namespace", i)
			require.NotNil(t, peer.PodSelector, "ingress rule %d: from selected pods of that namespace", i)
			require.NotEmpty(t, peer.PodSelector.MatchLabels, "ingress rule %d: an empty podSelector is every pod", i)
		}
		require.Len(t, rule.Ports, 1, "ingress rule %d: one port, the metrics port", i)
		p := rule.Ports[0].Port
		require.NotNil(t, p, "ingress rule %d: a port (without one: every port)", i)
		require.Contains(t, []string{metricsName, metricsPort}, p.String(), "ingress rule %d: only the metrics port", i)
	}

	egress := map[string]bool{}
	for _, rule := range np.Spec.Egress {
		for _, p := range rule.Ports {
			require.NotNil(t, p.Port, "an egress rule names its port")
			proto := corev1.ProtocolTCP // the default
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			egress[string(proto)+"/"+p.Port.String()] = true
		}
	}
	// The ConfigMap's mapping reads PostgreSQL: its port.
	for _, want := range []string{"UDP/53", "TCP/53", "TCP/443", "TCP/5432"} {
		require.True(t, egress[want], "egress to %s (DNS, DynamoDB over HTTPS, the source)", want)
	}
}

func subset(labels, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keys {
		if v, ok := labels[k]; ok {
			out[k] = v
		}
	}
	return out
}
