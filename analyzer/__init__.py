"""analyzer."""
