module allot.dev/e2e/helm

go 1.26.8

require helm.sh/helm/v3 v3.22.0 // indirect
