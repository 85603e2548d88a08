// A value loaded on first use and shared by every caller after; a failed load is tried again on the next use.
// The hook server loads the Kubernetes client this way (about 57 MB): only when it first needs it.
export function lazily<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
