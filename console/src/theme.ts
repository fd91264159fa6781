/**
 * Light, dark, or the system's choice (prefers-color-scheme). The choice lives in memory only
 * (no cookie, no storage): it is a `data-theme` attribute on <html> that the CSS variables
 * follow, so a reload goes back to the system's choice.
 */
export type Theme = 'system' | 'light' | 'dark';

export function applyTheme(theme: Theme): void {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

export function nextTheme(theme: Theme): Theme {
  return theme === 'system' ? 'light' : theme === 'light' ? 'dark' : 'system';
}

export function themeLabel(theme: Theme): string {
  return theme === 'system' ? 'Auto theme' : theme === 'light' ? 'Light theme' : 'Dark theme';
}
