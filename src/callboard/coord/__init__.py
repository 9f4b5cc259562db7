"""The drivers of working together, over a Client: delegation that waits (a task followed to its
end, a reply waited for); later hand-off packets and rounds."""
