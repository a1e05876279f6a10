package helm

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthhq/berth/engine/config"
)

// The values the test gives to what only a running cluster knows.
const (
	samplePodName = "berth-0"
	samplePodIP   = "10.1.2.3"
)

// sampleSecrets stand for Secrets the user creates (an existingSecret of the values), by the
// environment variable they feed: each must be a value berth accepts there.
var sampleSecrets = map[string]string{
	"BERTH__auth__admin_token": "user-provided-admin-token",
	"BERTH__database__url":     "postgres://berth:secret@postgres.example.internal:5432/berth",
}

// measuredRSS is the engine's resident memory after 2,000 actors and 206 runners
// (bench/RESULTS.md, step 8): the memory request must cover it.
var measuredRSS = resource.MustParse("125Mi")

// TestInvariants renders the chart with every values file and checks what a cluster would
// only show at run time: the configuration passes berth's own validation, and the probes,
// ports, grace period, Services, budget, autoscaler and ServiceMonitor agree with it.
func TestInvariants(t *testing.T) {
	for _, file := range valuesFiles(t) {
		t.Run(strings.ReplaceAll(nameOf(file), "/", "_"), func(t *testing.T) {
			r := renderFile(t, file)
			cfg := checkEngine(t, r)
			// Engine keys given under config reach the engine as they are.
			if v := r.value("config.topology.datacenter_label"); v != nil && fmt.Sprint(cfg.Topology.DatacenterLabel) != fmt.Sprint(v) {
				t.Errorf("topology.datacenter_label %d; the values say %v", cfg.Topology.DatacenterLabel, v)
			}
			if v, ok := r.value("config.topology.datacenters").(map[string]any); ok && len(cfg.Topology.Datacenters) != len(v) {
				t.Errorf("%d datacenters; the values list %d", len(cfg.Topology.Datacenters), len(v))
			}
		})
	}
}

// podTemplate is a workload's pod template with its kind and name.
type podTemplate struct {
	kind, name string
	selector   *metav1.LabelSelector
	template   *corev1.PodTemplateSpec
}

func (r *rendered) podTemplates() []podTemplate {
	var out []podTemplate
	for _, s := range r.statefulSets {
		out = append(out, podTemplate{"StatefulSet", s.Name, s.Spec.Selector, &s.Spec.Template})
	}
	for _, d := range r.deployments {
		out = append(out, podTemplate{"Deployment", d.Name, d.Spec.Selector, &d.Spec.Template})
	}
	return out
}

// checkEngine checks one rendering and returns the engine's configuration as berth loads it.
func checkEngine(t *testing.T, r *rendered) *config.Config {
	t.Helper()
	pods := r.podTemplates()
	for _, p := range pods {
		sel, err := metav1.LabelSelectorAsSelector(p.selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.template.Labels)) {
			t.Errorf("%s %s: its selector %v does not select its own pods (%v)", p.kind, p.name, p.selector, err)
		}
		checkSecretsExist(t, r, p)
	}
	var engines []podTemplate
	for _, p := range pods {
		if p.template.Labels["app.kubernetes.io/component"] == "engine" {
			engines = append(engines, p)
		}
	}
	if len(engines) != 1 {
		t.Fatalf("%d engine workloads, want 1", len(engines))
	}
	eng := engines[0]
	mode := r.value("mode")
	if (mode == "single") != (eng.kind == "StatefulSet") {
		t.Errorf("mode %v runs the engine as a %s", mode, eng.kind)
	}
	spec := &eng.template.Spec
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "berth" })
	if i < 0 {
		t.Fatalf("no container named berth in %s %s", eng.kind, eng.name)
	}
	c := &spec.Containers[i]

	cfg := loadConfig(t, r, spec, c)
	if cfg == nil {
		t.FailNow()
	}
	checkListeners(t, cfg, c)
	checkProbes(t, cfg, c)
	checkShutdown(t, cfg, spec, c)
	checkFiles(t, r, cfg, spec, c)
	checkStore(t, r, cfg, eng, c)
	checkServices(t, r, cfg, pods, eng)
	checkPDB(t, r, pods, eng)
	checkHPA(t, r, eng)
	checkServiceMonitor(t, r, cfg)
	if req := c.Resources.Requests.Memory(); req.Cmp(measuredRSS) < 0 {
		t.Errorf("memory request %s is below the measured %s", req, &measuredRSS)
	}
	if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && lim.Cmp(*c.Resources.Requests.Memory()) < 0 {
		t.Errorf("memory limit %s below the request %s", &lim, c.Resources.Requests.Memory())
	}
	return cfg
}

// loadConfig resolves the container's environment and configuration file as the kubelet
// would, and loads them with berth's configuration package, as `berth start` does: an
// unknown key, a bad value or a broken rule fails the test.
func loadConfig(t *testing.T, r *rendered, spec *corev1.PodSpec, c *corev1.Container) *config.Config {
	t.Helper()
	if len(c.Command) != 0 || len(c.Args) != 3 || c.Args[0] != "start" || c.Args[1] != "--config" {
		t.Errorf("container runs %q %q; want the image's berth with args start --config FILE", c.Command, c.Args)
		return nil
	}
	text, ok := mountedFile(t, r, spec, c, c.Args[2])
	if !ok {
		return nil
	}
	dir := t.TempDir()
	file := filepath.Join(dir, filepath.Base(c.Args[2]))
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := resolveEnv(t, r, c.Env)
	cfg, err := config.Load(config.Sources{Files: []string{file}, Environ: environ})
	if err != nil {
		t.Errorf("berth refuses the configuration the chart renders:\n%v\n--- %s\n%s", err, c.Args[2], text)
		return nil
	}
	// And berth's own command, on the same file and environment.
	if !testing.Short() || os.Getenv("BERTH_TEST_BINARY") != "" {
		cmd := exec.Command(berthBinary(t), "config", "validate", "--config", file)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, environ...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "configuration OK") {
			t.Errorf("berth config validate: %v\n%s", err, out)
		}
	}
	return cfg
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// resolveEnv turns a container's env into os.Environ form: $(VAR) of an earlier variable
// expanded, field references given sample values, Secrets read from the rendering or, for a
// Secret the user provides, given a sample value.
func resolveEnv(t *testing.T, r *rendered, env []corev1.EnvVar) []string {
	t.Helper()
	vars := map[string]string{}
	var out []string
	for _, e := range env {
		v := envRef.ReplaceAllStringFunc(e.Value, func(ref string) string {
			if x, ok := vars[ref[2:len(ref)-1]]; ok {
				return x
			}
			return ref
		})
		switch from := e.ValueFrom; {
		case from == nil:
		case from.FieldRef != nil:
			switch from.FieldRef.FieldPath {
			case "metadata.name":
				v = samplePodName
			case "status.podIP":
				v = samplePodIP
			default:
				t.Errorf("env %s: field %s has no sample value", e.Name, from.FieldRef.FieldPath)
			}
		case from.SecretKeyRef != nil:
			ref := from.SecretKeyRef
			if s := r.secret(ref.Name); s != nil {
				x, ok := s.StringData[ref.Key]
				if !ok {
					x, ok = string(s.Data[ref.Key]), s.Data[ref.Key] != nil
				}
				if !ok {
					t.Errorf("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
				}
				v = x
			} else if x, ok := sampleSecrets[e.Name]; ok {
				v = x
			} else {
				t.Errorf("env %s: from the user's Secret %s, for which the test has no sample value", e.Name, ref.Name)
			}
		default:
			t.Errorf("env %s: a source the test does not know", e.Name)
		}
		vars[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out
}

// mountedFile returns the text of a file of the container that comes from a ConfigMap
// rendered by the chart.
func mountedFile(t *testing.T, r *rendered, spec *corev1.PodSpec, c *corev1.Container, path string) (string, bool) {
	t.Helper()
	m, vol, rel := mountOf(spec, c, path)
	if m == nil || vol == nil || vol.ConfigMap == nil {
		t.Errorf("%s is not in a mounted ConfigMap", path)
		return "", false
	}
	for _, cm := range r.configMaps {
		if cm.Name == vol.ConfigMap.Name {
			text, ok := cm.Data[keyOf(vol.ConfigMap.Items, rel)]
			if !ok {
				t.Errorf("ConfigMap %s has no key for %s", cm.Name, path)
			}
			return text, ok
		}
	}
	t.Errorf("%s: ConfigMap %s is not rendered", path, vol.ConfigMap.Name)
	return "", false
}

// mountOf finds the mount a path lies under, its volume and the path within it.
func mountOf(spec *corev1.PodSpec, c *corev1.Container, path string) (*corev1.VolumeMount, *corev1.Volume, string) {
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
		if path == m.MountPath && m.SubPath != "" {
			rel, ok = m.SubPath, true // one file of the volume
		}
		if !ok {
			continue
		}
		for j := range spec.Volumes {
			if spec.Volumes[j].Name == m.Name {
				return m, &spec.Volumes[j], rel
			}
		}
		return m, nil, rel
	}
	return nil, nil, ""
}

// keyOf is the key a file of a projected volume comes from; without items, its own name.
func keyOf(items []corev1.KeyToPath, rel string) string {
	for _, it := range items {
		if it.Path == rel {
			return it.Key
		}
	}
	if len(items) > 0 {
		return ""
	}
	return rel
}

// checkSecretsExist checks every Secret a pod reads is rendered by the chart or one the
// values say the user creates (an existingSecret).
func checkSecretsExist(t *testing.T, r *rendered, p podTemplate) {
	t.Helper()
	user := r.userSecrets()
	check := func(where, name string) {
		if r.secret(name) == nil && !slices.Contains(user, name) {
			t.Errorf("%s %s: %s reads Secret %q, which is neither rendered nor an existingSecret of the values", p.kind, p.name, where, name)
		}
	}
	spec := &p.template.Spec
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				check("env "+e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			check("volume "+v.Name, v.Secret.SecretName)
		}
	}
}

// checkListeners checks that the listeners face the pod network, on the container's ports.
func checkListeners(t *testing.T, cfg *config.Config, c *corev1.Container) {
	t.Helper()
	if cfg.Auth.AdminToken == "" && !cfg.Auth.AllowAnonymous {
		t.Errorf("no admin token and not anonymous: berth would listen on loopback only, out of reach of probes and Services")
	}
	for _, h := range []string{cfg.Guard.Host, cfg.APIPeer.Host, cfg.Metrics.Host} {
		if h != "" && !net.ParseIP(h).IsUnspecified() {
			t.Errorf("a listener is bound to %q: the pod's other addresses would not reach it", h)
		}
	}
	want := map[string]uint16{"guard": cfg.Guard.Port, "api-peer": cfg.APIPeer.Port, "metrics": cfg.Metrics.Port}
	for name, port := range want {
		got, ok := containerPort(c, intstr.FromString(name))
		if !ok || got != int32(port) {
			t.Errorf("container port %s is %d (found %v); the configuration says %d", name, got, ok, port)
		}
	}
}

// containerPort resolves a port given by name or number to a port of the container.
func containerPort(c *corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func checkProbes(t *testing.T, cfg *config.Config, c *corev1.Container) {
	t.Helper()
	scheme := corev1.URISchemeHTTP
	if cfg.Guard.TLS.Enabled() {
		scheme = corev1.URISchemeHTTPS
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/health/ready"}, {"liveness", c.LivenessProbe, "/health"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s probe: want an HTTP GET of %s", p.name, p.path)
			continue
		}
		g := p.probe.HTTPGet
		port, ok := containerPort(c, g.Port)
		if g.Path != p.path || !ok || port != int32(cfg.Guard.Port) || g.Scheme != scheme {
			t.Errorf("%s probe: %s %s on port %v (%d); want %s %s on the guard port %d", p.name, g.Scheme, g.Path, g.Port.String(), port, scheme, p.path, cfg.Guard.Port)
		}
	}
}

// checkShutdown checks the pod gives the drain its time: the grace period exceeds the preStop
// sleep plus node.shutdown_drain_ms, and the liveness probe cannot restart the container
// during it.
func checkShutdown(t *testing.T, cfg *config.Config, spec *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	if spec.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds")
	}
	grace := *spec.TerminationGracePeriodSeconds
	var preStop int64
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		t.Error("no preStop hook")
	} else if h := c.Lifecycle.PreStop; h.Sleep != nil {
		preStop = h.Sleep.Seconds
	} else if h.Exec != nil && len(h.Exec.Command) == 2 && h.Exec.Command[0] == "/bin/sleep" {
		n, err := strconv.ParseInt(h.Exec.Command[1], 10, 64)
		if err != nil {
			t.Errorf("preStop sleeps %q", h.Exec.Command[1])
		}
		preStop = n
	} else {
		t.Errorf("preStop hook %+v: want a sleep", h)
	}
	if preStop < 1 {
		t.Errorf("preStop sleeps %d s: Services and load balancers need a moment to stop sending", preStop)
	}
	if grace*1000 <= preStop*1000+int64(cfg.Node.ShutdownDrainMs) {
		t.Errorf("terminationGracePeriodSeconds %d does not exceed preStop %d s + node.shutdown_drain_ms %d", grace, preStop, cfg.Node.ShutdownDrainMs)
	}
	if l := c.LivenessProbe; l != nil && int64(l.PeriodSeconds*l.FailureThreshold) < grace {
		t.Errorf("liveness window %d s shorter than the grace period %d s", l.PeriodSeconds*l.FailureThreshold, grace)
	}
}

// checkFiles checks the files berth reads and watches (tokens, certificates) come from
// Secrets that exist, mounted as directories: a subPath mount never sees an update, and
// berth re-reads these files when they change.
func checkFiles(t *testing.T, r *rendered, cfg *config.Config, spec *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	files := map[string]string{
		"auth.tokens_file":       cfg.Auth.TokensFile,
		"guard.tls.cert_file":    cfg.Guard.TLS.CertFile,
		"guard.tls.key_file":     cfg.Guard.TLS.KeyFile,
		"api_peer.tls.cert_file": cfg.APIPeer.TLS.CertFile,
		"api_peer.tls.key_file":  cfg.APIPeer.TLS.KeyFile,
		"api_peer.tls.ca_file":   cfg.APIPeer.TLS.CAFile,
	}
	for key, path := range files {
		if path == "" {
			continue
		}
		m, vol, rel := mountOf(spec, c, path)
		switch {
		case m == nil || vol == nil || vol.Secret == nil:
			t.Errorf("%s %s is not in a mounted Secret", key, path)
		case m.SubPath != "":
			t.Errorf("%s is mounted with subPath: updates of the Secret would never reach it", key)
		case keyOf(vol.Secret.Items, rel) == "":
			t.Errorf("%s %s: the volume's items do not project it", key, path)
		case strings.Contains(rel, "/"):
			t.Errorf("%s %s: not at the top of its volume", key, path)
		}
	}
	if (r.value("auth.tokensFile.existingSecret") != "") != (cfg.Auth.TokensFile != "") {
		t.Errorf("auth.tokensFile.existingSecret %v but auth.tokens_file %q", r.value("auth.tokensFile.existingSecret"), cfg.Auth.TokensFile)
	}
	if (r.value("tls.guard.existingSecret") != "") != cfg.Guard.TLS.Enabled() {
		t.Errorf("tls.guard.existingSecret %v but guard TLS %v", r.value("tls.guard.existingSecret"), cfg.Guard.TLS.Enabled())
	}
}

// checkStore checks the store and bus: a single node keeps its embedded store on the
// claimed volume; nodes of a cluster share PostgreSQL and NATS and tell each other their pod
// address.
func checkStore(t *testing.T, r *rendered, cfg *config.Config, eng podTemplate, c *corev1.Container) {
	t.Helper()
	u, err := url.Parse(cfg.Database.URL)
	if err != nil {
		t.Fatalf("database.url: %v", err)
	}
	spec := &eng.template.Spec
	if eng.kind == "StatefulSet" {
		if u.Scheme != "file" || cfg.PubSub.URL != "" {
			t.Errorf("single node on %s with bus %q; want the embedded store and no bus", u.Scheme, cfg.PubSub.URL)
		}
		m, vol, _ := mountOf(spec, c, u.Host+u.Path)
		if m == nil {
			t.Fatalf("the store %s is on no volume (read-only root)", u.Host+u.Path)
		}
		ss := r.statefulSets[slices.IndexFunc(r.statefulSets, func(s *appsv1.StatefulSet) bool { return s.Name == eng.name })]
		claimed := slices.ContainsFunc(ss.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool { return p.Name == m.Name })
		if r.value("persistence.enabled") == true && (!claimed || vol != nil) {
			t.Errorf("persistence on, but the store's volume %s is not the claim template's", m.Name)
		}
		if r.value("persistence.enabled") == false && (vol == nil || vol.EmptyDir == nil) {
			t.Errorf("persistence off, but the store's volume %s is not an emptyDir", m.Name)
		}
		if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 1 {
			t.Errorf("the embedded store belongs to one process; StatefulSet replicas %v", ss.Spec.Replicas)
		}
		if !slices.ContainsFunc(r.services, func(s *corev1.Service) bool { return s.Name == ss.Spec.ServiceName }) {
			t.Errorf("StatefulSet serviceName %q is not a rendered Service", ss.Spec.ServiceName)
		}
		return
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Errorf("cluster nodes on database %s; want PostgreSQL", u.Scheme)
	}
	if !strings.HasPrefix(cfg.PubSub.URL, "nats://") {
		t.Errorf("cluster nodes with bus %q; want nats://", cfg.PubSub.URL)
	}
	scheme := "http"
	if cfg.APIPeer.TLS.CertFile != "" {
		scheme = "https"
	}
	if want := fmt.Sprintf("%s://%s:%d", scheme, samplePodIP, cfg.APIPeer.Port); cfg.Node.Address != want {
		t.Errorf("node.address %q; want %q, this pod's api-peer", cfg.Node.Address, want)
	}
	// Bundled servers: the URLs name their Services and ports.
	for _, b := range []struct{ on, url string }{{"postgresql.enabled", cfg.Database.URL}, {"natsServer.enabled", cfg.PubSub.URL}} {
		if r.value(b.on) != true || (b.on == "natsServer.enabled" && r.value("nats.url") != "") {
			continue
		}
		bu, _ := url.Parse(b.url)
		host, port := bu.Hostname(), bu.Port()
		i := slices.IndexFunc(r.services, func(s *corev1.Service) bool { return s.Name == host })
		if i < 0 {
			t.Errorf("%s: the URL's host %s is not a rendered Service", b.on, host)
			continue
		}
		if !slices.ContainsFunc(r.services[i].Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port }) {
			t.Errorf("%s: Service %s has no port %s", b.on, host, port)
		}
	}
}

// checkServices checks every Service selects the pods of exactly one workload and sends to
// ports they have, and the engine's Services reach the configured listeners.
func checkServices(t *testing.T, r *rendered, cfg *config.Config, pods []podTemplate, eng podTemplate) {
	t.Helper()
	for _, s := range r.services {
		var hit []podTemplate
		for _, p := range pods {
			if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(p.template.Labels)) {
				hit = append(hit, p)
			}
		}
		if len(hit) != 1 {
			t.Errorf("Service %s selects %d workloads, want 1", s.Name, len(hit))
			continue
		}
		for _, sp := range s.Spec.Ports {
			found := false
			for _, c := range hit[0].template.Spec.Containers {
				if _, ok := containerPort(&c, sp.TargetPort); ok {
					found = true
				}
			}
			if !found {
				t.Errorf("Service %s port %s: target %s is no port of %s %s", s.Name, sp.Name, sp.TargetPort.String(), hit[0].kind, hit[0].name)
			}
		}
	}
	c := &eng.template.Spec.Containers[0]
	for _, want := range []struct {
		service string
		port    uint16
	}{{eng.name, cfg.Guard.Port}, {eng.name + "-peer", cfg.APIPeer.Port}, {eng.name + "-metrics", cfg.Metrics.Port}} {
		i := slices.IndexFunc(r.services, func(s *corev1.Service) bool { return s.Name == want.service })
		if i < 0 {
			t.Errorf("no Service %s", want.service)
			continue
		}
		s := r.services[i]
		if got, ok := containerPort(c, s.Spec.Ports[0].TargetPort); len(s.Spec.Ports) != 1 || !ok || got != int32(want.port) {
			t.Errorf("Service %s sends to port %d; the listener is on %d", s.Name, got, want.port)
		}
	}
}

// checkPDB checks the budget covers the engine's pods only and lets a node drain evict one.
func checkPDB(t *testing.T, r *rendered, pods []podTemplate, eng podTemplate) {
	t.Helper()
	if r.value("podDisruptionBudget.enabled") != true {
		if len(r.pdbs) != 0 {
			t.Errorf("PodDisruptionBudget off, %d rendered", len(r.pdbs))
		}
		return
	}
	if len(r.pdbs) != 1 {
		t.Fatalf("%d PodDisruptionBudgets, want 1", len(r.pdbs))
	}
	pdb := r.pdbs[0]
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if got, want := sel.Matches(labels.Set(p.template.Labels)), p.name == eng.name && p.kind == eng.kind; got != want {
			t.Errorf("PodDisruptionBudget selects %s %s: %v, want %v", p.kind, p.name, got, want)
		}
	}
	if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() < 1 {
		t.Errorf("PodDisruptionBudget min %v max %v: want maxUnavailable ≥ 1, so that a node drain can evict a node", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
}

func checkHPA(t *testing.T, r *rendered, eng podTemplate) {
	t.Helper()
	if r.value("autoscaling.enabled") != true {
		if len(r.hpas) != 0 {
			t.Errorf("autoscaling off, %d HPAs rendered", len(r.hpas))
		}
		if eng.kind == "Deployment" {
			d := r.deployments[0]
			if d.Spec.Replicas == nil || fmt.Sprint(*d.Spec.Replicas) != fmt.Sprint(r.value("replicaCount")) {
				t.Errorf("Deployment replicas %v, want replicaCount %v", d.Spec.Replicas, r.value("replicaCount"))
			}
		}
		return
	}
	if len(r.hpas) != 1 || eng.kind != "Deployment" {
		t.Fatalf("%d HPAs for a %s", len(r.hpas), eng.kind)
	}
	h := r.hpas[0]
	ref := h.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != eng.kind || ref.Name != eng.name {
		t.Errorf("HPA scales %s %s %s, not the engine's %s", ref.APIVersion, ref.Kind, ref.Name, eng.name)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
		t.Errorf("HPA min %v max %d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if r.deployments[0].Spec.Replicas != nil {
		t.Error("the Deployment sets replicas although the HPA owns them: every upgrade would reset the count")
	}
}

// checkServiceMonitor checks the ServiceMonitor finds the metrics Service, on the port the
// metrics listener is on, at /metrics.
func checkServiceMonitor(t *testing.T, r *rendered, cfg *config.Config) {
	t.Helper()
	if r.value("metrics.serviceMonitor.enabled") != true {
		if len(r.serviceMonitors) != 0 {
			t.Errorf("ServiceMonitor off, %d rendered", len(r.serviceMonitors))
		}
		return
	}
	if len(r.serviceMonitors) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(r.serviceMonitors))
	}
	sm := r.serviceMonitors[0]
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	var hit []*corev1.Service
	for _, s := range r.services {
		if sel.Matches(labels.Set(s.Labels)) {
			hit = append(hit, s)
		}
	}
	if len(hit) != 1 {
		t.Fatalf("the ServiceMonitor selects %d Services, want the metrics Service alone", len(hit))
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Path != "/metrics" {
		t.Errorf("ServiceMonitor path %q, want /metrics", ep.Path)
	}
	i := slices.IndexFunc(hit[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port })
	if i < 0 || hit[0].Spec.Ports[i].Port != int32(cfg.Metrics.Port) {
		t.Errorf("ServiceMonitor port %q is not the metrics port %d of Service %s", ep.Port, cfg.Metrics.Port, hit[0].Name)
	}
}

// TestUserSecretsDocumented checks every Secret the user may be asked to create is
// described in the chart's README.
func TestUserSecretsDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r := renderFile(t, "")
	var walk func(prefix string, v any)
	n := 0
	walk = func(prefix string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, x := range m {
			if k == "existingSecret" {
				n++
				if !strings.Contains(string(readme), "`"+prefix+k+"`") {
					t.Errorf("README.md does not describe `%s%s`", prefix, k)
				}
			}
			walk(prefix+k+".", x)
		}
	}
	walk("", r.values)
	if n < 5 {
		t.Errorf("found %d existingSecret values; the values changed?", n)
	}
}
