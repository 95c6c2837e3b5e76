package sandbox

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// fakeTier stands in for the native tier: selection does not run anything,
// so a real tier is not needed here (the native package tests selection
// with the real one).
type fakeTier struct{ Unavailable }

func TestSelectOrder(t *testing.T) {
	native := func(Options) (Tier, error) {
		return &fakeTier{Unavailable{err: &UnavailableError{Tier: NativeTierName(runtime.GOOS)}}}, nil
	}
	f := Factories{Native: native}
	cases := []struct {
		opts Options
		want TierName
	}{
		{Options{}, NativeTierName(runtime.GOOS)},
		{Options{DockerImage: "alpine:3.19"}, TierDocker},
		{Options{FCBinary: "/fc", DockerImage: "alpine:3.19"}, TierFirecracker},
		{Options{Tier: "native", FCBinary: "/fc"}, NativeTierName(runtime.GOOS)},
		{Options{Tier: "docker"}, TierDocker},
		{Options{Permissive: true, Tier: "docker"}, TierNone},
	}
	for _, tc := range cases {
		tier, err := Select(tc.opts, f)
		if err != nil {
			t.Fatalf("%+v: %v", tc.opts, err)
		}
		if tier.Name() != tc.want {
			t.Errorf("%+v: %s; want %s", tc.opts, tier.Name(), tc.want)
		}
	}
	tier, _ := Select(Options{Tier: "firecracker"}, f)
	if err := tier.Available(context.Background()); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("not-built tier: %v", err)
	}
	if _, err := Select(Options{Tier: "qemu"}, f); err == nil {
		t.Fatal("unknown tier accepted")
	}
	bad := Factories{Native: func(Options) (Tier, error) { return nil, errors.New("bad user") }}
	if _, err := Select(Options{}, bad); err == nil {
		t.Fatal("a factory error was swallowed")
	}
}
