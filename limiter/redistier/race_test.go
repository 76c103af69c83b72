//go:build race

package redistier

func init() { raceBuild = true }
