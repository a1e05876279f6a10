package apihttp

// Datacenter is how the APIs see one datacenter of the topology.
type Datacenter struct {
	Name      string
	Label     uint16
	IsLeader  bool
	PublicURL string // guard and public API
	PeerURL   string // api-peer, which other datacenters call
	ProxyURL  string // gateway
}

// Topology is every datacenter and which one is local. The engine builds it from its config.
type Topology struct {
	Local       uint16       // this engine's datacenter label
	Datacenters []Datacenter // ordered by label; exactly one IsLeader
}

// LocalDatacenter returns the datacenter labelled Local.
func (t Topology) LocalDatacenter() Datacenter {
	dc, _ := t.ByLabel(t.Local)
	return dc
}

// Leader returns the leader datacenter, which owns namespaces.
func (t Topology) Leader() Datacenter {
	for _, dc := range t.Datacenters {
		if dc.IsLeader {
			return dc
		}
	}
	return Datacenter{}
}

// ByLabel returns the datacenter with that label (the label in an id says where it was made).
func (t Topology) ByLabel(label uint16) (Datacenter, bool) {
	for _, dc := range t.Datacenters {
		if dc.Label == label {
			return dc, true
		}
	}
	return Datacenter{}, false
}

// ByName returns the datacenter with that name.
func (t Topology) ByName(name string) (Datacenter, bool) {
	for _, dc := range t.Datacenters {
		if dc.Name == name {
			return dc, true
		}
	}
	return Datacenter{}, false
}

// IsLocal reports whether dc is this engine's datacenter.
func (t Topology) IsLocal(dc Datacenter) bool { return dc.Label == t.Local }
